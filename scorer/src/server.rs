//! The main loop: dispatch, concurrency, hot reload and the one drain path.
//!
//! ```text
//! stdin ─► rpc-reader (framing, size limit, parse) ─► main loop ─┬─ status, score, rank, reload: inline
//!                                                                │    └ rank's ranking.served ─► scorer-recorder ─► tape
//!                                                                ├─ train, train_from_db ─► scorer-train ─┐
//!                                                                └─ save_checkpoint ─► scorer-save ───────┤
//! stdout ◄─ rpc-writer (flush when idle) ◄──────── responses, in completion order, matched by id ◄─────┘
//! ```
//!
//! * **Concurrency.** Scoring reads an immutable `Arc` of the weights; the
//!   training thread works on a clone and swaps the `Arc` when it is done, so
//!   a `score` never waits for training. Responses may leave out of order.
//! * **Hot reload.** Before `status`, `score`, `rank` and `reload` the main
//!   loop `stat`s `models/current`; when it changed, the checkpoint it names
//!   is loaded (checksums verified) and swapped in. A bad file is logged and
//!   the old weights keep serving.
//! * **Errors.** Every handler runs under `catch_unwind`: a panic becomes
//!   -32603 and the process keeps serving.
//! * **Drain.** End of input: every request already read is answered, the
//!   served rankings still queued are committed, queued training finishes,
//!   output is flushed, exit 0. SIGTERM or `shutdown`: the request in hand
//!   finishes, training in progress is cancelled (answered -32000), requests
//!   still queued are answered -32000, the served rankings still queued are
//!   committed, output is flushed, exit 0. A second SIGTERM exits at once (see
//!   [`shared::base::shutdown`]), losing any ranking not yet committed (see
//!   [`crate::recorder`]).

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64};
use std::sync::mpsc::{Receiver, RecvTimeoutError, Sender};
use std::thread::JoinHandle;
use std::time::Duration;

use shared::base::paths::Paths;
use shared::base::rpc::{self, Connection, Id, Message, RpcError, encode_error, encode_result};
use shared::base::shutdown::Shutdown;

use crate::error::{Error, Result};
use crate::native::Native;
use crate::protocol::{
    ReloadResult, Request, SIGNET_FEATURES, SaveCheckpointParams, SaveResult, ScoreEntry, ScoreParams, ScoreResult,
    ShutdownResult, StatusResult,
};
use crate::serving::{Origin, PointerWatch, Serving, Slot, Weights, destination, load_checkpoint, save};
use crate::signet::{List, SignetInputs, order_desc, signet_logits, softmax};
use crate::training::{Job, Trainer, TrainingContext, guarded, panic_message};

/// How often the main loop looks at the shutdown flag while idle.
const TICK: Duration = Duration::from_millis(25);

/// How `engram-scorer serve` runs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// Embedding size the protocol accepts (`--native-dim`, default 768).
    pub native_dim: usize,
    /// Signet's `--checkpoint`: weights to serve at start if the file exists.
    pub checkpoint: Option<PathBuf>,
    /// The data home (`models/current`, the store for `rank`); `None` if unknown.
    pub paths: Option<Paths>,
    /// Longest request line accepted.
    pub max_line: usize,
    /// Longest a `train_from_db` run may take.
    pub training_budget: Duration,
}

impl ServeOptions {
    /// Defaults: 768 dimensions, no checkpoint, the data home from the
    /// environment, 64 MiB lines, a 25 s training budget.
    pub fn from_env() -> ServeOptions {
        ServeOptions {
            native_dim: 768,
            checkpoint: None,
            paths: Paths::from_env().ok(),
            max_line: rpc::DEFAULT_MAX_LINE,
            training_budget: Duration::from_secs(25),
        }
    }
}

/// Serves JSON-RPC on stdin/stdout until the end of input, `shutdown` or a
/// signal; returns once every response is flushed.
pub fn run(opts: ServeOptions, shutdown: Shutdown) -> Result<()> {
    let (conn, threads) = Connection::<Request>::stdio(opts.max_line);
    serve(conn, opts, shutdown)?;
    threads.join().map_err(|e| Error::io("write responses to", std::path::Path::new("stdout"), e))
}

/// Serves one connection (stdio, or an in-memory one in tests). Returns once
/// the connection is drained; the caller joins its I/O threads.
pub fn serve(conn: Connection<Request>, opts: ServeOptions, shutdown: Shutdown) -> Result<()> {
    let Connection { receiver, sender } = conn;
    let mut server = Server::start(opts, sender, shutdown);
    let end = loop {
        if server.stopping() {
            break End::Stop;
        }
        match receiver.recv_timeout(TICK) {
            Ok(msg) => server.handle(msg),
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break End::Eof,
        }
    };
    server.drain(end, &receiver);
    Ok(())
}

enum End {
    Eof,
    Stop,
}

/// The dispatcher and everything it owns.
struct Server {
    opts: ServeOptions,
    out: Sender<Vec<u8>>,
    shutdown: Shutdown,
    slot: Arc<Slot>,
    /// The first weights are fresh ones still being built (status need not wait).
    fresh_pending: bool,
    watch: PointerWatch,
    native: Native,
    trainer: Trainer,
    saves: Vec<JoinHandle<()>>,
    stop_requested: bool,
    output_closed: bool,
}

impl Server {
    fn start(opts: ServeOptions, out: Sender<Vec<u8>>, shutdown: Shutdown) -> Server {
        let native = Native::new(opts.paths.clone());
        let mut watch = PointerWatch::new(opts.paths.clone());
        let promoted = watch.mark_seen();
        let native_dim = opts.native_dim;
        let checkpoint = opts.checkpoint.clone().filter(|p| !crate::serving::checkpoint_files(p).is_empty());
        if let Some(p) = &opts.checkpoint
            && checkpoint.is_none()
        {
            tracing::info!(path = %p.display(), "no checkpoint there yet: it will be written by training");
        }
        let fresh_pending = checkpoint.is_none() && promoted.is_none();
        let paths = opts.paths.clone();
        let slot = Arc::new(Slot::preparing(move || initial_weights(checkpoint, promoted, paths, native_dim)));
        let ctx = TrainingContext {
            home: opts.paths.clone(),
            slot: Arc::clone(&slot),
            out: out.clone(),
            native_dim,
            budget: opts.training_budget,
            tz: native.tz().clone(),
            cancel: Arc::new(AtomicBool::new(false)),
            busy: Arc::new(AtomicBool::new(false)),
            steps: Arc::new(AtomicU64::new(0)),
            pairs: Arc::new(AtomicU64::new(0)),
        };
        let trainer = Trainer::spawn(ctx);
        Server {
            opts,
            out,
            shutdown,
            slot,
            fresh_pending,
            watch,
            native,
            trainer,
            saves: Vec::new(),
            stop_requested: false,
            output_closed: false,
        }
    }

    fn stopping(&self) -> bool {
        self.stop_requested || self.output_closed || self.shutdown.requested()
    }

    fn send(&mut self, line: Vec<u8>) {
        if self.out.send(line).is_err() {
            // The writer is gone: nobody reads our output any more.
            self.output_closed = true;
        }
    }

    fn handle(&mut self, msg: Message<Request>) {
        match msg {
            Message::Request { id, method, params } => {
                let span = tracing::debug_span!("request", %id, %method).entered();
                self.dispatch(id, params);
                drop(span);
            }
            Message::Notification { method, params } => {
                if matches!(params, Request::Shutdown) {
                    self.stop_requested = true;
                } else {
                    tracing::debug!(%method, "notification ignored (no method takes notifications)");
                }
            }
            Message::Invalid { id: Some(id), error } => {
                tracing::warn!(%id, %error, "invalid request");
                self.send(encode_error(&id, &error));
            }
            Message::Invalid { id: None, error } => {
                tracing::warn!(%error, "invalid notification ignored");
            }
        }
    }

    fn dispatch(&mut self, id: Id, req: Request) {
        match req {
            Request::Train(params) => self.queue(Job::Train { id, params }),
            Request::TrainFromDb(params) => {
                // Checked before the training: where its weights may go.
                if let Some(path) = params.checkpoint_path.as_deref()
                    && let Err(why) = destination(path, self.opts.paths.as_ref())
                {
                    self.send(encode_error(&id, &Error::params("checkpoint_path", why).to_rpc()));
                    return;
                }
                self.queue(Job::TrainFromDb { id, params })
            }
            Request::SaveCheckpoint(params) => self.save_checkpoint(id, params),
            Request::Shutdown => {
                self.send(encode_result(&id, &ShutdownResult { shutting_down: true }));
                self.stop_requested = true;
            }
            Request::Unknown(method) if !(cfg!(test) && method == "__panic") => {
                self.send(encode_error(&id, &RpcError::method_not_found(&method)));
            }
            other => {
                let result = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.answer(&id, other)));
                let line = match result {
                    Ok(Ok(line)) => line,
                    Ok(Err(e)) => {
                        tracing::debug!(%id, error = %e, "request failed");
                        encode_error(&id, &e.to_rpc())
                    }
                    Err(payload) => {
                        let e = Error::Panicked(panic_message(payload.as_ref()));
                        tracing::error!(%id, error = %e, "a handler panicked; the process keeps serving");
                        self.native.reset();
                        encode_error(&id, &e.to_rpc())
                    }
                };
                self.send(line);
            }
        }
    }

    fn queue(&mut self, job: Job) {
        if let Err(job) = self.trainer.submit(job) {
            let id = match *job {
                Job::Train { id, .. } | Job::TrainFromDb { id, .. } => id,
            };
            self.send(encode_error(&id, &RpcError::internal("the training thread is gone")));
        }
    }

    fn answer(&mut self, id: &Id, req: Request) -> Result<Vec<u8>> {
        match req {
            Request::Status => Ok(encode_result(id, &self.status())),
            Request::Score(p) => {
                self.check_pointer();
                Ok(encode_result(id, &self.score(p)?))
            }
            Request::Rank(p) => {
                self.check_pointer();
                let serving = self.slot.load();
                Ok(encode_result(id, &self.native.rank(p, &serving)?))
            }
            Request::Reload => Ok(encode_result(id, &self.reload()?)),
            Request::Unknown(m) if cfg!(test) && m == "__panic" => panic!("requested by a test"),
            _ => Err(Error::params("method", "not handled inline")),
        }
    }

    /// Swaps in a newly promoted checkpoint, if `models/current` changed.
    fn check_pointer(&mut self) -> bool {
        match self.watch.poll() {
            Some(Ok(serving)) => {
                tracing::info!(version = serving.version, checkpoint = ?serving.checkpoint_hash(), "serving newly promoted weights");
                self.slot.publish(serving);
                true
            }
            Some(Err(e)) => {
                tracing::error!(error = %e, "the promoted checkpoint cannot be loaded; the current weights keep serving");
                false
            }
            None => false,
        }
    }

    fn status(&mut self) -> StatusResult {
        self.check_pointer();
        let serving = match self.slot.peek() {
            Some(s) => Some(s),
            None if self.fresh_pending => None,
            None => Some(self.slot.load()),
        };
        let (trained, version, last, origin, checkpoint, model_dim, format) = match &serving {
            Some(s) => (
                s.trained,
                s.version,
                s.last_trained(),
                s.origin.name(),
                s.checkpoint_hash().map(str::to_owned),
                s.native_dim(),
                s.format().name(),
            ),
            None => (false, 1, None, Origin::Fresh.name(), None, self.opts.native_dim, "engram"),
        };
        StatusResult {
            trained,
            training_pairs: self.trainer.pairs(),
            model_version: version,
            last_trained: last,
            native_dimensions: self.opts.native_dim,
            feature_dimensions: SIGNET_FEATURES,
            engine: crate::native::writer_name(),
            weights: origin.to_owned(),
            checkpoint,
            model_native_dimensions: model_dim,
            training: self.trainer.busy(),
            format: format.to_owned(),
        }
    }

    fn score(&self, p: ScoreParams) -> Result<ScoreResult> {
        let n = p.candidate_ids.len();
        if n == 0 {
            return Err(Error::params("candidate_ids", "cannot score an empty candidate set"));
        }
        let serving = self.slot.load();
        let inputs = SignetInputs {
            context_embedding: p.context_embedding,
            context_text: p.context_text,
            n,
            embeddings: p.candidate_embeddings.unwrap_or_default(),
            texts: p.candidate_texts.unwrap_or_default(),
            features: p.candidate_features.unwrap_or_default(),
            project_slot: p.project_slot.unwrap_or(0),
        };
        let probs = match &serving.weights {
            Weights::Engram(model) => {
                let list =
                    List::build(model, self.opts.native_dim, inputs, shared::base::time::Ts::now(), self.native.tz())?;
                softmax(&list.logits(model)?)
            }
            Weights::Signet(model) => {
                let logits = signet_logits(model, self.opts.native_dim, &inputs)?;
                crate::signet::softmax64(&logits)
            }
        };
        if probs.iter().any(|p| !p.is_finite()) {
            // Inputs within range keep every sum finite; if some still do
            // not, it is these inputs that the model cannot score.
            return Err(Error::params("params", "these inputs give non-finite scores"));
        }
        let mut ids: Vec<Option<String>> = p.candidate_ids.into_iter().map(Some).collect();
        let scores = order_desc(&probs)
            .into_iter()
            .map(|i| ScoreEntry { id: ids[i].take().unwrap_or_default(), score: probs[i] })
            .collect();
        Ok(ScoreResult { scores })
    }

    fn reload(&mut self) -> Result<ReloadResult> {
        let config = self.native.reload_config();
        let before = self.slot.peek().map(|s| s.generation);
        self.watch.forget();
        let changed = self.check_pointer();
        let serving = self.slot.load();
        if let Err(e) = &config {
            tracing::warn!(error = %e, "the configuration is invalid; the previous one stays");
        }
        Ok(ReloadResult {
            config_loaded: config.is_ok(),
            model_changed: changed && before != Some(serving.generation),
            model_version: serving.version,
            checkpoint: serving.checkpoint_hash().map(str::to_owned),
        })
    }

    fn save_checkpoint(&mut self, id: Id, p: SaveCheckpointParams) {
        // An absolute path in a directory that exists (or in the data home's
        // models directory): no file lands in the working directory, no
        // directory is made elsewhere.
        let to = match destination(&p.path, self.opts.paths.as_ref()) {
            Ok(to) => to,
            Err(why) => {
                self.send(encode_error(&id, &Error::params("path", why).to_rpc()));
                return;
            }
        };
        // Only a checkpoint is ever replaced: not a database, a symlink, a
        // directory or any other file the client names.
        let magics: [&[u8]; 2] = [&predictor::checkpoint::MAGIC, b"SGPT"];
        if let Err(why) = shared::base::fsutil::check_replaceable(&to.path, &magics) {
            self.send(encode_error(&id, &Error::params("path", why).to_rpc()));
            return;
        }
        let slot = Arc::clone(&self.slot);
        let out = self.out.clone();
        let spawned = std::thread::Builder::new().name("scorer-save".into()).spawn(move || {
            let result = guarded(|| {
                let serving = slot.load();
                to.prepare()?;
                let saved = save(&serving, &to.path, p.flags.unwrap_or(0))?;
                tracing::info!(path = %saved.path.display(), bytes = saved.bytes, version = serving.version, "checkpoint saved");
                Ok(SaveResult {
                    saved: true,
                    bytes: saved.bytes,
                    model_version: serving.version,
                    path: saved.path.display().to_string(),
                    format: serving.format().name().to_owned(),
                })
            });
            let line = match result {
                Ok(r) => encode_result(&id, &r),
                Err(e) => encode_error(&id, &e.to_rpc()),
            };
            let _ = out.send(line);
        });
        match spawned {
            Ok(handle) => {
                self.saves.retain(|h| !h.is_finished());
                self.saves.push(handle);
            }
            Err(e) => tracing::error!(error = %e, "could not start a thread to save the checkpoint"),
        }
    }

    /// The one drain path (see the module documentation).
    fn drain(mut self, end: End, receiver: &Receiver<Message<Request>>) {
        let stop = matches!(end, End::Stop);
        tracing::debug!(stop, "draining");
        if stop {
            self.trainer.cancel();
            while let Ok(msg) = receiver.try_recv() {
                if let Message::Request { id, .. } | Message::Invalid { id: Some(id), .. } = msg {
                    self.send(encode_error(&id, &RpcError::server("the scorer is shutting down")));
                }
            }
        }
        // Every ranking answered so far reaches the tape before exit.
        self.native.finish();
        let shutdown = self.shutdown.clone();
        self.trainer.finish(&|| shutdown.requested());
        for h in self.saves.drain(..) {
            let _ = h.join();
        }
        // Dropping `self` drops the last senders: the writer flushes and ends.
    }
}

/// The first weights: the `--checkpoint` file (or the newer one written
/// beside it, see [`crate::serving`]) if it loads, else the promoted
/// checkpoint, else fresh ones.
fn initial_weights(
    checkpoint: Option<PathBuf>,
    promoted: Option<String>,
    paths: Option<Paths>,
    native_dim: usize,
) -> Serving {
    if let Some(path) = checkpoint {
        match load_checkpoint(&path, native_dim) {
            Some(s) => {
                tracing::info!(path = %path.display(), version = s.version, format = s.format().name(), "serving the checkpoint");
                return s;
            }
            None => {
                tracing::warn!(path = %path.display(), "the checkpoint cannot be served; starting from other weights")
            }
        }
    }
    if let (Some(hash), Some(paths)) = (promoted, paths) {
        match shared::storage::models::load(&paths, &hash, None) {
            Ok(l) => return Serving::from_checkpoint(l.checkpoint, Origin::Promoted(l.hash)),
            Err(e) => tracing::error!(error = %e, "the promoted checkpoint cannot be loaded"),
        }
    }
    Serving::fresh(native_dim).unwrap_or_else(|e| {
        tracing::error!(error = %e, native_dim, "cannot build weights of this size; serving text-only weights");
        Serving::fresh(0).unwrap_or_else(|_| unreachable!("the default config is valid"))
    })
}

#[cfg(test)]
mod tests;
