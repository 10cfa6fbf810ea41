//! JSON-RPC 2.0 over newline-delimited streams: framing, envelopes, errors and
//! a connection with reader and writer threads (the shape of rust-analyzer's
//! `lsp-server`, with one JSON object per line as Signet and MCP use).
//!
//! * [`LineReader`] splits a byte stream into lines and refuses a line longer
//!   than its limit *without buffering it whole*: it keeps the limit's worth,
//!   discards the rest up to the next newline, and reports the line as
//!   [`Line::TooLong`] with its first bytes (enough to recover the `id`).
//! * [`parse_message`] turns a line into a [`Message`]. The envelope is read
//!   in one pass and, when `method` precedes `params` (as every client we know
//!   writes it), the params are deserialized straight into the method's typed
//!   struct ([`Params`]) with no intermediate `serde_json::Value`. Any failure
//!   falls back to a slow path that parses a `Value` and explains precisely what
//!   is wrong ([`Params::explain`]), so errors name the offending field.
//!   Before all that, a protocol may read the lines of its bulkiest methods
//!   itself ([`Params::read_line`]).
//! * [`Connection`] carries parsed messages in and encoded responses out over
//!   channels; [`Connection::stdio`] runs the reader and writer on
//!   named threads, [`Connection::memory`] gives tests an in-memory peer that
//!   goes through exactly the same reader code.
//!
//! Responses are encoded once, by the thread that produced them
//! ([`encode_result`], [`encode_error`]), and may be sent in any order: the
//! client matches them by id. A message without an `id` is a notification and
//! gets no response, as JSON-RPC 2.0 requires.

use std::fmt;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::thread::{self, JoinHandle};

use crate::base::json_scan::{skip_string, skip_value, skip_ws};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;
use std::sync::mpsc::{self, Receiver, Sender, SyncSender, TryRecvError};

/// Invalid JSON was received.
pub const PARSE_ERROR: i32 = -32700;
/// The JSON sent is not a valid request object.
pub const INVALID_REQUEST: i32 = -32600;
/// The method does not exist.
pub const METHOD_NOT_FOUND: i32 = -32601;
/// Invalid method parameters.
pub const INVALID_PARAMS: i32 = -32602;
/// Internal error (including a handler that panicked).
pub const INTERNAL_ERROR: i32 = -32603;
/// Implementation-defined server error (e.g. shutting down, cancelled).
pub const SERVER_ERROR: i32 = -32000;

/// The default limit on one request line: 64 MiB.
pub const DEFAULT_MAX_LINE: usize = 64 << 20;
/// Largest buffer a [`LineReader`] preallocates from the previous line's size.
const LINE_HINT_CAP: usize = 4 << 20;
/// Bytes of an over-long line kept to recover its id.
const TOO_LONG_HEAD: usize = 4096;

/// A request id: a string, a number, or null.
///
/// A number is kept as the text it was written as, and written back as that
/// text: `18446744073709551616` or `1e2` come back exactly as sent (a number
/// parsed into an f64 or a u64 would not).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Id {
    /// `null` (used in replies to unparseable requests).
    Null,
    /// A number, as written (a valid JSON number).
    Number(String),
    /// A string.
    String(String),
}

impl Id {
    /// The id whose JSON text is `raw` (surrounding whitespace allowed), or
    /// why it is not one.
    pub fn from_raw(raw: &[u8]) -> Result<Id, String> {
        let text = std::str::from_utf8(raw).map_err(|_| "an id must be valid UTF-8".to_owned())?.trim();
        match text.as_bytes().first() {
            Some(b'"') => serde_json::from_str::<String>(text).map(Id::String).map_err(|e| e.to_string()),
            Some(b'n') if text == "null" => Ok(Id::Null),
            Some(c) if *c == b'-' || c.is_ascii_digit() => match serde_json::from_str::<serde_json::Number>(text) {
                Ok(_) => Ok(Id::Number(text.to_owned())),
                Err(e) => Err(format!("an id must be a string, a number or null: {e}")),
            },
            _ => Err(format!("an id must be a string, a number or null, not {text:.40}")),
        }
    }
}

impl fmt::Display for Id {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Id::Null => f.write_str("null"),
            Id::Number(n) => f.write_str(n),
            Id::String(s) => write!(f, "{s:?}"),
        }
    }
}

impl Serialize for Id {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Id::Null => s.serialize_unit(),
            Id::Number(n) => match serde_json::value::RawValue::from_string(n.clone()) {
                Ok(raw) => raw.serialize(s),
                Err(e) => Err(serde::ser::Error::custom(e)),
            },
            Id::String(v) => s.serialize_str(v),
        }
    }
}

impl<'de> Deserialize<'de> for Id {
    /// From serde_json: the exact text of a number is kept (from JSON text;
    /// from an already-parsed `Value`, as exact as that value).
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Id, D::Error> {
        let raw = <Box<serde_json::value::RawValue>>::deserialize(d)?;
        Id::from_raw(raw.get().as_bytes()).map_err(de::Error::custom)
    }
}

impl From<&str> for Id {
    fn from(s: &str) -> Id {
        Id::String(s.to_owned())
    }
}

impl From<i64> for Id {
    fn from(n: i64) -> Id {
        Id::Number(n.to_string())
    }
}

/// A JSON-RPC error object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RpcError {
    /// One of the constants of this module, or an application code.
    pub code: i32,
    /// A one-line description.
    pub message: String,
    /// Optional structured detail.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub data: Option<Value>,
}

impl RpcError {
    /// An error with `code` and `message`.
    pub fn new(code: i32, message: impl Into<String>) -> RpcError {
        RpcError { code, message: message.into(), data: None }
    }

    /// -32700.
    pub fn parse_error(message: impl fmt::Display) -> RpcError {
        RpcError::new(PARSE_ERROR, format!("parse error: {message}"))
    }

    /// -32600.
    pub fn invalid_request(message: impl fmt::Display) -> RpcError {
        RpcError::new(INVALID_REQUEST, format!("invalid request: {message}"))
    }

    /// -32601.
    pub fn method_not_found(method: &str) -> RpcError {
        RpcError::new(METHOD_NOT_FOUND, format!("method not found: {method}"))
    }

    /// -32602; the message should name the offending field.
    pub fn invalid_params(message: impl fmt::Display) -> RpcError {
        RpcError::new(INVALID_PARAMS, format!("invalid params: {message}"))
    }

    /// -32603.
    pub fn internal(message: impl fmt::Display) -> RpcError {
        RpcError::new(INTERNAL_ERROR, format!("internal error: {message}"))
    }

    /// -32000.
    pub fn server(message: impl fmt::Display) -> RpcError {
        RpcError::new(SERVER_ERROR, message.to_string())
    }
}

impl fmt::Display for RpcError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} ({})", self.message, self.code)
    }
}

impl std::error::Error for RpcError {}

/// The params of a protocol's methods, deserialized by method name.
///
/// Implement it for a request enum with one variant per method (and one for
/// unknown methods, whose params should be skipped with [`IgnoredAny`]).
pub trait Params: Sized {
    /// Deserializes the params of `method`. `params` is a JSON `null` when the
    /// request has none.
    fn deserialize<'de, D: Deserializer<'de>>(method: &str, params: D) -> Result<Self, D::Error>;

    /// Like [`Params::deserialize`] from an already-parsed value, on the error
    /// path; the message should name the offending field (the default uses the
    /// deserializer's own message).
    fn explain(method: &str, params: Value) -> Result<Self, String> {
        <Self as Params>::deserialize(method, params).map_err(|e| e.to_string())
    }

    /// A faster reading of a whole line, tried first by [`parse_message`]
    /// for the methods where parsing dominates (large requests). `None`
    /// leaves the line to the generic reader; when it answers, it must give
    /// exactly the message the generic reader would give. The default reads
    /// nothing.
    fn read_line(line: &[u8]) -> Option<Message<Self>> {
        let _ = line;
        None
    }
}

/// One parsed line.
#[derive(Debug)]
pub enum Message<P> {
    /// A request: answer it with the same id.
    Request {
        /// The id to echo.
        id: Id,
        /// The method name.
        method: String,
        /// Its params.
        params: P,
    },
    /// A notification (no `id`): never answered.
    Notification {
        /// The method name.
        method: String,
        /// Its params.
        params: P,
    },
    /// Not a valid request. Answer `error` with `id` when `id` is `Some`
    /// (`Id::Null` when the id could not be read); `None` means a broken
    /// notification, which gets no answer.
    Invalid {
        /// Where to send the error.
        id: Option<Id>,
        /// What is wrong.
        error: RpcError,
    },
}

/// The envelope read on the fast path.
struct Envelope<P> {
    jsonrpc: Option<String>,
    id: Option<Id>,
    method: Option<String>,
    params: Option<Result<P, Value>>,
}

struct EnvelopeVisitor<P>(std::marker::PhantomData<P>);

struct ParamsSeed<'a, P> {
    method: &'a str,
    _p: std::marker::PhantomData<P>,
}

impl<'de, P: Params> DeserializeSeed<'de> for ParamsSeed<'_, P> {
    type Value = P;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<P, D::Error> {
        <P as Params>::deserialize(self.method, d)
    }
}

impl<'de, P: Params> Visitor<'de> for EnvelopeVisitor<P> {
    type Value = Envelope<P>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON-RPC request object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Envelope<P>, A::Error> {
        let mut env = Envelope { jsonrpc: None, id: None, method: None, params: None };
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            match key.as_ref() {
                "jsonrpc" => env.jsonrpc = Some(map.next_value()?),
                "id" => env.id = Some(map.next_value()?),
                "method" => env.method = Some(map.next_value()?),
                "params" => {
                    env.params = Some(match &env.method {
                        Some(m) => Ok(map.next_value_seed(ParamsSeed { method: m, _p: std::marker::PhantomData })?),
                        None => Err(map.next_value::<Value>()?),
                    })
                }
                _ => {
                    map.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(env)
    }
}

/// Parses one line (see the module documentation).
pub fn parse_message<P: Params>(line: &[u8]) -> Message<P> {
    if let Some(msg) = P::read_line(line) {
        return msg;
    }
    let fast = {
        let mut de = serde_json::Deserializer::from_slice(line);
        de.deserialize_map(EnvelopeVisitor::<P>(std::marker::PhantomData)).and_then(|env| de.end().map(|()| env))
    };
    match fast {
        Ok(env) => finish_envelope(env),
        Err(_) => slow_path(line),
    }
}

fn finish_envelope<P: Params>(env: Envelope<P>) -> Message<P> {
    let reply_to = env.id.clone().unwrap_or(Id::Null);
    if env.jsonrpc.as_deref() != Some("2.0") {
        let why = match &env.jsonrpc {
            None => "missing \"jsonrpc\": \"2.0\"".to_owned(),
            Some(v) => format!("\"jsonrpc\" must be \"2.0\", not {v:?}"),
        };
        return Message::Invalid { id: Some(reply_to), error: RpcError::invalid_request(why) };
    }
    let Some(method) = env.method else {
        return Message::Invalid { id: Some(reply_to), error: RpcError::invalid_request("missing \"method\"") };
    };
    let params = match env.params {
        Some(Ok(p)) => Ok(p),
        Some(Err(value)) => P::explain(&method, value),
        None => P::explain(&method, Value::Null),
    };
    match (env.id, params) {
        (Some(id), Ok(params)) => Message::Request { id, method, params },
        (None, Ok(params)) => Message::Notification { method, params },
        (id, Err(e)) => Message::Invalid { id, error: RpcError::invalid_params(e) },
    }
}

fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn slow_path<P: Params>(line: &[u8]) -> Message<P> {
    let value: Value = match serde_json::from_slice(line) {
        Ok(v) => v,
        Err(e) => return Message::Invalid { id: Some(Id::Null), error: RpcError::parse_error(e) },
    };
    let mut obj = match value {
        Value::Object(o) => o,
        Value::Array(_) => {
            return Message::Invalid {
                id: Some(Id::Null),
                error: RpcError::invalid_request("batch requests are not supported; send one object per line"),
            };
        }
        other => {
            return Message::Invalid {
                id: Some(Id::Null),
                error: RpcError::invalid_request(format!("expected a request object, got {}", kind(&other))),
            };
        }
    };
    let id = match obj.remove("id") {
        None => None,
        // The id as written: parsing into a value rounded big numbers.
        Some(v) => match sniff_id(line).map_or_else(|| Id::deserialize(v).map_err(|e| e.to_string()), Ok) {
            Ok(id) => Some(id),
            Err(e) => return Message::Invalid { id: Some(Id::Null), error: RpcError::invalid_request(e) },
        },
    };
    let jsonrpc = match obj.remove("jsonrpc") {
        Some(Value::String(s)) => Some(s),
        Some(other) => Some(other.to_string()),
        None => None,
    };
    let method = match obj.remove("method") {
        Some(Value::String(s)) => Some(s),
        Some(other) => {
            return Message::Invalid {
                id: Some(id.unwrap_or(Id::Null)),
                error: RpcError::invalid_request(format!("\"method\" must be a string, not {}", kind(&other))),
            };
        }
        None => None,
    };
    let params = obj.remove("params").map(Err);
    finish_envelope(Envelope { jsonrpc, id, method, params })
}

/// Best effort: the top-level `"id"` of a (possibly truncated) request object,
/// found by scanning keys in order and skipping values (`None` when the id
/// comes after the truncation point or the text is not an object).
pub fn sniff_id(head: &[u8]) -> Option<Id> {
    let mut i = skip_ws(head, 0);
    if head.get(i) != Some(&b'{') {
        return None;
    }
    i += 1;
    loop {
        i = skip_ws(head, i);
        if head.get(i) != Some(&b'"') {
            return None;
        }
        let key_end = skip_string(head, i)?;
        let key = &head[i + 1..key_end - 1];
        i = skip_ws(head, key_end);
        if head.get(i) != Some(&b':') {
            return None;
        }
        i = skip_ws(head, i + 1);
        let value_end = skip_value(head, i)?;
        if key == b"id" {
            return Id::from_raw(&head[i..value_end]).ok();
        }
        i = skip_ws(head, value_end);
        if head.get(i) != Some(&b',') {
            return None;
        }
        i += 1;
    }
}

/// Encodes a success response (one line, no newline).
pub fn encode_result<T: Serialize + ?Sized>(id: &Id, result: &T) -> Vec<u8> {
    #[derive(Serialize)]
    struct Ok<'a, T: ?Sized> {
        jsonrpc: &'static str,
        id: &'a Id,
        result: &'a T,
    }
    match serde_json::to_vec(&Ok { jsonrpc: "2.0", id, result }) {
        Ok(bytes) => bytes,
        Err(e) => encode_error(id, &RpcError::internal(format!("could not encode the result: {e}"))),
    }
}

/// Encodes an error response (one line, no newline).
pub fn encode_error(id: &Id, error: &RpcError) -> Vec<u8> {
    #[derive(Serialize)]
    struct Err<'a> {
        jsonrpc: &'static str,
        id: &'a Id,
        error: &'a RpcError,
    }
    serde_json::to_vec(&Err { jsonrpc: "2.0", id, error }).unwrap_or_else(|_| {
        format!(r#"{{"jsonrpc":"2.0","id":null,"error":{{"code":{INTERNAL_ERROR},"message":"unencodable error"}}}}"#)
            .into_bytes()
    })
}

/// Encodes `Ok` as a result and `Err` as an error.
pub fn encode_response<T: Serialize>(id: &Id, response: &Result<T, RpcError>) -> Vec<u8> {
    match response {
        Ok(result) => encode_result(id, result),
        Err(error) => encode_error(id, error),
    }
}

/// One line of input.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Line {
    /// A complete line, without its newline (and without a trailing `\r`).
    Complete(Vec<u8>),
    /// A line over the limit, discarded.
    TooLong {
        /// Its length in bytes (without the newline).
        len: u64,
        /// Its first bytes.
        head: Vec<u8>,
    },
}

/// Splits a stream into lines of at most `max` bytes (see the module documentation).
#[derive(Debug)]
pub struct LineReader<R> {
    inner: R,
    max: usize,
    /// Length of the previous line: the next buffer starts that large, so a
    /// client sending requests of similar sizes costs no regrowth copies.
    last: usize,
}

impl<R: BufRead> LineReader<R> {
    /// A reader refusing lines longer than `max` bytes.
    pub fn new(inner: R, max: usize) -> LineReader<R> {
        LineReader { inner, max, last: 0 }
    }

    /// The next line; `None` at the end of the stream. A final line without
    /// a newline is returned as complete.
    pub fn read_line(&mut self) -> io::Result<Option<Line>> {
        let limit = self.max as u64 + 1;
        let mut buf = Vec::with_capacity(self.last.saturating_add(1).min(self.max).min(LINE_HINT_CAP));
        // `read_until` retries on `Interrupted` and finds the newline with memchr.
        let total = (&mut self.inner).take(limit).read_until(b'\n', &mut buf)?;
        if total == 0 {
            return Ok(None);
        }
        self.last = if (total as u64) < limit { total } else { 0 };
        if buf.last() == Some(&b'\n') {
            buf.pop();
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(Some(Line::Complete(buf)));
        }
        if total as u64 >= limit {
            buf.truncate(TOO_LONG_HEAD);
            let head = buf;
            // Discard the rest of the line, chunk by chunk, without keeping it.
            let mut len = total as u64;
            loop {
                let chunk = match self.inner.fill_buf() {
                    Ok(c) => c,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(e),
                };
                if chunk.is_empty() {
                    break;
                }
                match chunk.iter().position(|&b| b == b'\n') {
                    Some(i) => {
                        len += i as u64;
                        self.inner.consume(i + 1);
                        break;
                    }
                    None => {
                        let n = chunk.len();
                        len += n as u64;
                        self.inner.consume(n);
                    }
                }
            }
            return Ok(Some(Line::TooLong { len, head }));
        }
        Ok(Some(Line::Complete(buf)))
    }
}

/// The server's end of a connection.
#[derive(Debug)]
pub struct Connection<P> {
    /// Parsed incoming messages; disconnected at the end of the input.
    pub receiver: Receiver<Message<P>>,
    /// Encoded outgoing lines (without newline).
    pub sender: Sender<Vec<u8>>,
}

/// The threads of a connection; join them after dropping every sender.
#[derive(Debug)]
pub struct IoThreads {
    reader: Option<JoinHandle<io::Result<()>>>,
    writer: Option<JoinHandle<io::Result<()>>>,
}

impl IoThreads {
    /// Waits for the writer to flush everything sent (every clone of the
    /// connection's sender must be dropped first). The reader is joined only
    /// if it has already finished: it may be blocked on an input nobody closes.
    /// A closed output (the peer went away) is not an error.
    pub fn join(mut self) -> io::Result<()> {
        if let Some(w) = self.writer.take() {
            match w.join() {
                Ok(Ok(())) => {}
                Ok(Err(e)) if e.kind() == io::ErrorKind::BrokenPipe => {}
                Ok(Err(e)) => return Err(e),
                Err(_) => return Err(io::Error::other("the writer thread panicked")),
            }
        }
        if let Some(r) = self.reader.take()
            && r.is_finished()
        {
            match r.join() {
                Ok(result) => result?,
                Err(_) => return Err(io::Error::other("the reader thread panicked")),
            }
        }
        Ok(())
    }
}

/// The client's end of an in-memory connection (tests).
#[derive(Debug)]
pub struct MemoryClient {
    /// Raw input bytes for the server (lines must end with `\n`).
    pub input: Sender<Vec<u8>>,
    /// The server's output lines.
    pub output: Receiver<Vec<u8>>,
}

impl MemoryClient {
    /// Sends one line (a newline is appended).
    pub fn send_line(&self, line: &[u8]) -> bool {
        let mut bytes = Vec::with_capacity(line.len() + 1);
        bytes.extend_from_slice(line);
        bytes.push(b'\n');
        self.input.send(bytes).is_ok()
    }

    /// Sends a JSON value as one line.
    pub fn send(&self, value: &Value) -> bool {
        self.send_line(value.to_string().as_bytes())
    }

    /// Receives one output line as JSON, waiting at most `timeout`.
    pub fn recv(&self, timeout: std::time::Duration) -> Option<Value> {
        let line = self.output.recv_timeout(timeout).ok()?;
        serde_json::from_slice(&line).ok()
    }
}

/// Reads raw chunks from a channel as a byte stream.
struct ChannelRead {
    rx: Receiver<Vec<u8>>,
    chunk: Vec<u8>,
    pos: usize,
}

impl Read for ChannelRead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.chunk.len() {
            match self.rx.recv() {
                Ok(c) => {
                    self.chunk = c;
                    self.pos = 0;
                }
                Err(_) => return Ok(0),
            }
        }
        let n = out.len().min(self.chunk.len() - self.pos);
        out[..n].copy_from_slice(&self.chunk[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

fn reader_loop<P: Params, R: Read>(input: R, max_line: usize, tx: SyncSender<Message<P>>) -> io::Result<()> {
    let mut lines = LineReader::new(BufReader::with_capacity(1 << 16, input), max_line);
    while let Some(line) = lines.read_line()? {
        let msg = match line {
            Line::Complete(l) => {
                if l.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                parse_message::<P>(&l)
            }
            Line::TooLong { len, head } => Message::Invalid {
                id: Some(sniff_id(&head).unwrap_or(Id::Null)),
                error: RpcError::invalid_request(format!(
                    "the request line has {len} bytes, over the limit of {max_line}; it was discarded"
                )),
            },
        };
        if tx.send(msg).is_err() {
            break;
        }
    }
    Ok(())
}

fn writer_loop<W: Write>(mut out: W, rx: Receiver<Vec<u8>>) -> io::Result<()> {
    // Write everything that is ready, then flush once.
    while let Ok(mut line) = rx.recv() {
        loop {
            out.write_all(&line)?;
            out.write_all(b"\n")?;
            match rx.try_recv() {
                Ok(next) => line = next,
                Err(TryRecvError::Empty | TryRecvError::Disconnected) => break,
            }
        }
        out.flush()?;
    }
    out.flush()
}

impl<P: Params + Send + 'static> Connection<P> {
    /// A connection over stdin and stdout, with lines limited to `max_line` bytes.
    pub fn stdio(max_line: usize) -> (Connection<P>, IoThreads) {
        Connection::streams(io::stdin(), io::stdout(), max_line)
    }

    /// A connection over any input and output streams.
    pub fn streams<R, W>(input: R, output: W, max_line: usize) -> (Connection<P>, IoThreads)
    where
        R: Read + Send + 'static,
        W: Write + Send + 'static,
    {
        let (in_tx, in_rx) = mpsc::sync_channel(16);
        let (out_tx, out_rx) = mpsc::channel();
        let reader = thread::Builder::new()
            .name("rpc-reader".into())
            .spawn(move || reader_loop::<P, R>(input, max_line, in_tx))
            .expect("spawn the reader thread");
        let writer = thread::Builder::new()
            .name("rpc-writer".into())
            .spawn(move || writer_loop(io::BufWriter::with_capacity(1 << 16, output), out_rx))
            .expect("spawn the writer thread");
        (Connection { receiver: in_rx, sender: out_tx }, IoThreads { reader: Some(reader), writer: Some(writer) })
    }

    /// An in-memory connection: the client writes raw bytes (parsed by the
    /// same reader as [`Connection::stdio`]) and reads the server's lines.
    pub fn memory(max_line: usize) -> (Connection<P>, MemoryClient, IoThreads) {
        let (raw_tx, raw_rx) = mpsc::channel();
        let (in_tx, in_rx) = mpsc::sync_channel(16);
        let (out_tx, out_rx) = mpsc::channel();
        let reader = thread::Builder::new()
            .name("rpc-reader".into())
            .spawn(move || reader_loop::<P, _>(ChannelRead { rx: raw_rx, chunk: Vec::new(), pos: 0 }, max_line, in_tx))
            .expect("spawn the reader thread");
        (
            Connection { receiver: in_rx, sender: out_tx },
            MemoryClient { input: raw_tx, output: out_rx },
            IoThreads { reader: Some(reader), writer: None },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A toy protocol: `add {a, b}` and anything else.
    #[derive(Debug, PartialEq)]
    enum Toy {
        Add { a: i64, b: i64 },
        Other(String),
    }

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct AddParams {
        a: i64,
        b: i64,
    }

    impl Params for Toy {
        fn deserialize<'de, D: Deserializer<'de>>(method: &str, d: D) -> Result<Toy, D::Error> {
            match method {
                "add" => AddParams::deserialize(d).map(|p| Toy::Add { a: p.a, b: p.b }),
                other => {
                    IgnoredAny::deserialize(d)?;
                    Ok(Toy::Other(other.to_owned()))
                }
            }
        }
    }

    fn parse(line: &str) -> Message<Toy> {
        parse_message(line.as_bytes())
    }

    fn invalid(line: &str) -> (Option<Id>, i32, String) {
        match parse(line) {
            Message::Invalid { id, error } => (id, error.code, error.message),
            other => panic!("expected invalid, got {other:?}"),
        }
    }

    #[test]
    fn requests_and_notifications() {
        match parse(r#"{"jsonrpc":"2.0","id":"req-1","method":"add","params":{"a":1,"b":2}}"#) {
            Message::Request { id, method, params } => {
                assert_eq!(id, Id::from("req-1"));
                assert_eq!(method, "add");
                assert_eq!(params, Toy::Add { a: 1, b: 2 });
            }
            other => panic!("{other:?}"),
        }
        // params before method takes the slow path and gives the same result.
        match parse(r#"{"params":{"a":1,"b":2},"method":"add","id":7,"jsonrpc":"2.0"}"#) {
            Message::Request { id, params, .. } => {
                assert_eq!(id, Id::from(7));
                assert_eq!(params, Toy::Add { a: 1, b: 2 });
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(parse(r#"{"jsonrpc":"2.0","method":"ping"}"#), Message::Notification { .. }));
        match parse(r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#) {
            Message::Request { id, params, .. } => {
                assert_eq!(id, Id::Null);
                assert_eq!(params, Toy::Other("ping".into()));
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn errors_carry_the_right_code_and_id() {
        let (id, code, _) = invalid("{not json");
        assert_eq!((id, code), (Some(Id::Null), PARSE_ERROR));
        let (id, code, msg) = invalid(r#"{"jsonrpc":"1.0","id":3,"method":"add"}"#);
        assert_eq!((id, code), (Some(Id::from(3)), INVALID_REQUEST));
        assert!(msg.contains("2.0"), "{msg}");
        let (id, code, _) = invalid(r#"{"jsonrpc":"2.0","id":3}"#);
        assert_eq!((id, code), (Some(Id::from(3)), INVALID_REQUEST));
        let (id, code, msg) = invalid(r#"{"jsonrpc":"2.0","id":"x","method":"add","params":{"a":1,"b":"two"}}"#);
        assert_eq!((id, code), (Some(Id::from("x")), INVALID_PARAMS));
        assert!(msg.contains("invalid type"), "{msg}");
        let (id, code, msg) = invalid(r#"{"jsonrpc":"2.0","id":"x","method":"add","params":{"a":1}}"#);
        assert_eq!((id, code), (Some(Id::from("x")), INVALID_PARAMS));
        assert!(msg.contains("`b`"), "{msg}");
        let (id, code, _) = invalid(r#"[{"jsonrpc":"2.0","id":1,"method":"add"}]"#);
        assert_eq!((id, code), (Some(Id::Null), INVALID_REQUEST));
        let (id, code, _) = invalid(r#"{"jsonrpc":"2.0","id":{"x":1},"method":"add"}"#);
        assert_eq!((id, code), (Some(Id::Null), INVALID_REQUEST));
        let (id, code, _) = invalid(r#"{"jsonrpc":"2.0","id":1,"method":5}"#);
        assert_eq!((id, code), (Some(Id::from(1)), INVALID_REQUEST));
        // A broken notification is not answered.
        let (id, code, _) = invalid(r#"{"jsonrpc":"2.0","method":"add","params":{}}"#);
        assert_eq!((id, code), (None, INVALID_PARAMS));
        // Trailing garbage after the object is a parse error.
        let (id, code, _) = invalid(r#"{"jsonrpc":"2.0","id":1,"method":"ping"} x"#);
        assert_eq!((id, code), (Some(Id::Null), PARSE_ERROR));
    }

    #[test]
    fn ids_round_trip_as_given() {
        for (text, id) in [(r#""req-9""#, Id::from("req-9")), ("12", Id::from(12)), ("null", Id::Null)] {
            let line = encode_result(&id, &serde_json::json!({"ok": true}));
            let v: Value = serde_json::from_slice(&line).unwrap();
            assert_eq!(v["id"].to_string(), text);
            assert_eq!(v["jsonrpc"], "2.0");
        }
        let e = encode_error(&Id::from("1.5"), &RpcError::method_not_found("nope"));
        let v: Value = serde_json::from_slice(&e).unwrap();
        assert_eq!(v["error"]["code"], METHOD_NOT_FOUND);
        assert!(v.get("result").is_none());
    }

    #[test]
    fn sniffs_the_id_of_a_truncated_request() {
        let head = br#"{"jsonrpc":"2.0", "method":"score","id":"req-4","params":{"candidate_ids":["a","#;
        assert_eq!(sniff_id(head), Some(Id::from("req-4")));
        assert_eq!(sniff_id(br#"{"params":{"x":[1,2,{"y":"}"}]},"id":17,"m"#), Some(Id::from(17)));
        assert_eq!(sniff_id(br#"{"jsonrpc":"2.0","params":{"x":[1,2,3"#), None);
        assert_eq!(sniff_id(b"garbage"), None);
    }

    #[test]
    fn line_reader_limits_without_buffering_everything() {
        let long = "x".repeat(100);
        let input = format!("short\r\n{long}\n\nlast");
        let mut r = LineReader::new(io::Cursor::new(input.into_bytes()), 50);
        assert_eq!(r.read_line().unwrap(), Some(Line::Complete(b"short".to_vec())));
        match r.read_line().unwrap() {
            Some(Line::TooLong { len, head }) => {
                assert_eq!(len, 100);
                assert!(head.len() <= 51);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(r.read_line().unwrap(), Some(Line::Complete(Vec::new())));
        assert_eq!(r.read_line().unwrap(), Some(Line::Complete(b"last".to_vec())));
        assert_eq!(r.read_line().unwrap(), None);
        // Exactly at the limit is accepted.
        let mut r = LineReader::new(io::Cursor::new(format!("{}\n", "y".repeat(50)).into_bytes()), 50);
        assert!(matches!(r.read_line().unwrap(), Some(Line::Complete(l)) if l.len() == 50));
        // Over the limit and never terminated.
        let mut r = LineReader::new(io::Cursor::new("z".repeat(80).into_bytes()), 50);
        assert!(matches!(r.read_line().unwrap(), Some(Line::TooLong { len: 80, .. })));
        assert_eq!(r.read_line().unwrap(), None);
    }

    #[test]
    fn memory_connection_goes_through_the_reader() {
        let (conn, client, threads) = Connection::<Toy>::memory(64);
        client.send_line(br#"{"jsonrpc":"2.0","id":1,"method":"add","params":{"a":2,"b":3}}"#);
        client.send_line(b"   ");
        client.send_line(
            format!(r#"{{"jsonrpc":"2.0","id":2,"method":"add","params":{{"a":"{}"}}}}"#, "9".repeat(80)).as_bytes(),
        );
        let timeout = std::time::Duration::from_secs(5);
        match conn.receiver.recv_timeout(timeout).unwrap() {
            Message::Request { id, params: Toy::Add { a, b }, .. } => {
                conn.sender.send(encode_result(&id, &(a + b))).unwrap();
            }
            other => panic!("{other:?}"),
        }
        match conn.receiver.recv_timeout(timeout).unwrap() {
            Message::Invalid { id, error } => {
                assert_eq!(id, Some(Id::from(2)));
                assert_eq!(error.code, INVALID_REQUEST);
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(client.recv(timeout).unwrap()["result"], 5);
        drop(client);
        assert!(conn.receiver.recv_timeout(timeout).is_err());
        drop(conn);
        threads.join().unwrap();
    }
}
