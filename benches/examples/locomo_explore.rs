//! Exploration of LoCoMo retrieval with the real pipeline (prototype of the
//! trainer's `eval locomo`): `cargo run --release -p benches --example locomo_explore`.

#![allow(clippy::unwrap_used)]

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;
use shared::event::{Body, Event, MemoryAdded};
use shared::ids::{MemoryId, SessionKey};
use shared::journal::Journal;
use shared::paths::Paths;
use shared::rank;
use shared::time::Ts;

struct Turn {
    dia: String,
    speaker: String,
    text: String,
}

struct Session {
    index: usize,
    date: Ts,
    turns: Vec<Turn>,
}

struct Qa {
    question: String,
    evidence: Vec<String>,
    category: u64,
}

struct Conv {
    id: String,
    sessions: Vec<Session>,
    qa: Vec<Qa>,
}

fn parse_date(s: &str) -> Option<Ts> {
    // "1:56 pm on 8 May, 2023"
    let (time, date) = s.split_once(" on ")?;
    let (hm, ampm) = time.trim().split_once(' ')?;
    let (h, m) = hm.split_once(':')?;
    let mut h: u32 = h.parse().ok()?;
    let m: u32 = m.parse().ok()?;
    if ampm.eq_ignore_ascii_case("pm") && h != 12 {
        h += 12;
    }
    if ampm.eq_ignore_ascii_case("am") && h == 12 {
        h = 0;
    }
    let parts: Vec<&str> = date.split([' ', ',']).filter(|p| !p.is_empty()).collect();
    let day: u32 = parts.first()?.parse().ok()?;
    let months = [
        "january",
        "february",
        "march",
        "april",
        "may",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ];
    let name = parts.get(1)?.to_lowercase();
    let month = months.iter().position(|mm| *mm == name)? as u32 + 1;
    let year: i32 = parts.get(2)?.parse().ok()?;
    Some(Ts::from_civil(year, month, day, h, m, 0))
}

fn normalise_evidence(raw: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for e in raw {
        let Some(s) = e.as_str() else { continue };
        for piece in s.split([';', ',', ' ']).filter(|p| !p.is_empty()) {
            let p = piece.replace("D:", "D");
            if p.len() > 1 && p.starts_with('D') && p[1..].split(':').count() == 2 {
                out.push(p);
            }
        }
    }
    out
}

fn load(path: &str) -> Vec<Conv> {
    let data: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut convs = Vec::new();
    for item in data.as_array().unwrap() {
        let c = &item["conversation"];
        let mut sessions = Vec::new();
        for k in 1..100 {
            let Some(turns) = c.get(format!("session_{k}")).and_then(Value::as_array) else { continue };
            let date = c.get(format!("session_{k}_date_time")).and_then(Value::as_str).and_then(parse_date).unwrap();
            let turns = turns
                .iter()
                .map(|t| {
                    let mut text = t["text"].as_str().unwrap_or("").to_owned();
                    if let Some(cap) = t.get("blip_caption").and_then(Value::as_str) {
                        text.push_str(&format!(" [shares a photo: {cap}]"));
                    }
                    Turn {
                        dia: t["dia_id"].as_str().unwrap_or("").to_owned(),
                        speaker: t["speaker"].as_str().unwrap_or("").to_owned(),
                        text,
                    }
                })
                .collect();
            sessions.push(Session { index: k, date, turns });
        }
        let qa = item["qa"]
            .as_array()
            .unwrap()
            .iter()
            .map(|q| Qa {
                question: q["question"].as_str().unwrap_or("").to_owned(),
                evidence: normalise_evidence(q.get("evidence").and_then(Value::as_array).map_or(&[][..], |v| v)),
                category: q["category"].as_u64().unwrap_or(0),
            })
            .collect();
        convs.push(Conv { id: item["sample_id"].as_str().unwrap().to_owned(), sessions, qa });
    }
    convs
}

fn mid(conv: &str, dia: &str) -> MemoryId {
    MemoryId(format!("mem_{conv}_{dia}"))
}

fn build(conv: &Conv, dir: &std::path::Path) -> (Journal, Ts) {
    let mut j = Journal::open(&Paths::at(dir), "locomo").unwrap();
    let mut events = Vec::new();
    let mut last = Ts(0);
    for s in &conv.sessions {
        let session = SessionKey::new("engram", &format!("locomo/{}/session_{}", conv.id, s.index));
        for (i, t) in s.turns.iter().enumerate() {
            let ts = s.date.plus_millis(i as i64 * 1000);
            last = last.max(ts);
            events.push(Event::new(
                ts,
                "locomo",
                Some(session.clone()),
                Body::MemoryAdded(MemoryAdded {
                    memory_id: mid(&conv.id, &t.dia),
                    content: format!("{}: {}", t.speaker, t.text),
                    memory_type: "fact".into(),
                    importance: 0.5,
                    tags: vec![t.speaker.to_lowercase()],
                    source: "import".into(),
                    source_session: Some(session.clone()),
                    speaker: Some(t.speaker.clone()),
                    ..Default::default()
                }),
            ));
        }
    }
    j.append(&events).unwrap();
    (j, last.plus_millis(86_400_000))
}

#[derive(Default)]
struct Acc {
    n: f64,
    r1: f64,
    r5: f64,
    r10: f64,
    r50: f64,
    ndcg10: f64,
    mrr: f64,
}

impl Acc {
    fn add(&mut self, ranked: &[MemoryId], rel: &BTreeSet<MemoryId>) {
        let labels: Vec<f32> = ranked.iter().map(|m| f32::from(u8::from(rel.contains(m)))).collect();
        let found = |k: usize| ranked.iter().take(k).filter(|m| rel.contains(*m)).count() as f64 / rel.len() as f64;
        self.n += 1.0;
        self.r1 += found(1);
        self.r5 += found(5);
        self.r10 += found(10);
        self.r50 += found(50);
        // IDCG over all relevant items, including those not ranked.
        let mut all = labels.clone();
        all.extend(std::iter::repeat_n(1.0, rel.len().saturating_sub(labels.iter().filter(|&&l| l > 0.0).count())));
        let order: Vec<usize> = (0..labels.len()).collect();
        self.ndcg10 += f64::from(predictor::metrics::ndcg_at_k(&order, &all, 10));
        self.mrr += f64::from(predictor::metrics::mrr(&order, &labels));
    }
    fn line(&self, name: &str) -> String {
        let n = self.n.max(1.0);
        format!(
            "{name:10} n={:4} R@1 {:.3} R@5 {:.3} R@10 {:.3} R@50 {:.3} NDCG@10 {:.3} MRR {:.3}",
            self.n,
            self.r1 / n,
            self.r5 / n,
            self.r10 / n,
            self.r50 / n,
            self.ndcg10 / n,
            self.mrr / n
        )
    }
}

struct List {
    category: u64,
    question: String,
    texts: Vec<String>,
    conv: usize,
    rel: BTreeSet<MemoryId>,
    ids: Vec<MemoryId>,
    baseline: Vec<f32>,
    sample: predictor::train::Sample,
}

fn order(ids: &[MemoryId], scores: &[f32]) -> Vec<MemoryId> {
    predictor::fusion::order_by_score(scores).into_iter().map(|i| ids[i].clone()).collect()
}

fn main() {
    let path = std::env::args().nth(1).unwrap_or_else(|| "/work/shared/bench/locomo/locomo-dev.json".into());
    let epochs: usize = std::env::args().nth(2).and_then(|a| a.parse().ok()).unwrap_or(6);
    let convs = load(&path);
    let tz = jiff::tz::TimeZone::UTC;
    let t0 = std::time::Instant::now();
    let mut lists: Vec<List> = Vec::new();
    let mut bm25_acc = Acc::default();
    let mut pool_recall = 0.0;
    let dim = std::env::var("DIM").ok().and_then(|v| v.parse().ok()).unwrap_or(64);
    let cfg = predictor::model::ModelConfig { native_dim: 0, dim, ..Default::default() };
    for (ci, conv) in convs.iter().enumerate() {
        let dir = tempfile::tempdir().unwrap();
        let (j, now) = build(conv, dir.path());
        for qa in conv.qa.iter().filter(|q| (1..=4).contains(&q.category) && !q.evidence.is_empty()) {
            let rel: BTreeSet<MemoryId> = qa.evidence.iter().map(|e| mid(&conv.id, e)).collect();
            let bm25: Vec<MemoryId> =
                rank::pool::bm25_search(j.store(), &qa.question, 100).unwrap().into_iter().map(|(m, _)| m).collect();
            bm25_acc.add(&bm25, &rel);
            let pool = rank::pool::gather(
                j.store(),
                &rank::PoolQuery { text: &qa.question, embedding: None, project: None, session: None, now },
                &{
                    let env = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
                    let d = rank::PoolLimits::default();
                    rank::PoolLimits {
                        pool: env("POOL", d.pool),
                        bm25: env("BM25", d.bm25),
                        neighbor_hits: env("NBHITS", d.neighbor_hits),
                        neighbor_window: env("NBWIN", d.neighbor_window),
                        ..d
                    }
                },
            )
            .unwrap();
            let ids: Vec<MemoryId> = pool.memories.iter().map(|m| m.id.clone()).collect();
            pool_recall += ids.iter().filter(|m| rel.contains(*m)).count() as f64 / rel.len() as f64;
            let baseline = rank::baseline_scores(&pool);
            let session = rank::session_signals(j.store(), None, None, now, &tz).unwrap();
            let sample = predictor::train::Sample {
                query: predictor::model::OwnedQuery {
                    tokens: predictor::tokenizer::token_ids(&qa.question, cfg.hash_buckets),
                    embedding: None,
                    session,
                },
                candidates: pool
                    .memories
                    .iter()
                    .map(|m| predictor::model::OwnedCandidate {
                        tokens: predictor::tokenizer::token_ids(&m.content, cfg.hash_buckets),
                        embedding: None,
                        signals: m.signals,
                    })
                    .collect(),
                labels: ids.iter().map(|m| f32::from(u8::from(rel.contains(m)))).collect(),
                weight: 1.0,
            };
            let texts = pool.memories.iter().map(|m| m.content.clone()).collect();
            lists.push(List {
                category: qa.category,
                question: qa.question.clone(),
                texts,
                conv: ci,
                rel,
                ids,
                baseline,
                sample,
            });
        }
    }
    if let Ok(out) = std::env::var("DUMP_JSONL") {
        use std::io::Write;
        let mut f = std::io::BufWriter::new(std::fs::File::create(out).unwrap());
        for l in &lists {
            let cands: Vec<Value> = l
                .sample
                .candidates
                .iter()
                .zip(&l.ids)
                .zip(&l.texts)
                .zip(&l.baseline)
                .map(|(((c, id), text), base)| {
                    let s = &c.signals;
                    serde_json::json!({
                        "id": id.0, "text": text, "label": u8::from(l.rel.contains(id)), "baseline": base,
                        "bm25": s.bm25_score, "bm25_rank": s.bm25_rank, "lex": s.lexical_overlap,
                        "nb": s.neighbor_score, "sess": s.session_match, "fol": s.follows_hit,
                        "terms": s.content_terms, "tag": s.tag_overlap, "age": s.age_days,
                    })
                })
                .collect();
            let line = serde_json::json!({
                "conv": l.conv, "category": l.category, "question": l.question,
                "evidence": l.rel.iter().map(|m| m.0.clone()).collect::<Vec<_>>(), "cands": cands,
            });
            writeln!(f, "{line}").unwrap();
        }
    }
    let n_lists = lists.len() as f64;
    println!("{}", bm25_acc.line("bm25"));
    println!(
        "pool recall {:.3} (mean pool {:.1})",
        pool_recall / n_lists,
        lists.iter().map(|l| l.ids.len()).sum::<usize>() as f64 / n_lists
    );
    println!("pools built in {:.1} s", t0.elapsed().as_secs_f64());
    if std::env::var_os("POOL_ONLY").is_some() {
        return;
    }
    let mut accs: BTreeMap<&str, Acc> = BTreeMap::new();
    let mut cat_accs: BTreeMap<(u64, &str), Acc> = BTreeMap::new();
    for fold in 0..convs.len() {
        let t = std::time::Instant::now();
        let (test, rest): (Vec<&List>, Vec<&List>) = lists.iter().partition(|l| l.conv == fold);
        let train: Vec<predictor::train::Sample> =
            rest.iter().enumerate().filter(|(i, _)| i % 10 != 0).map(|(_, l)| l.sample.clone()).collect();
        let valid_lists: Vec<&List> = rest.iter().enumerate().filter(|(i, _)| i % 10 == 0).map(|(_, l)| *l).collect();
        let valid: Vec<predictor::train::Sample> = valid_lists.iter().map(|l| l.sample.clone()).collect();
        let seed = std::env::var("SEED").ok().and_then(|v| v.parse().ok()).unwrap_or(7);
        let mut model = predictor::model::Model::new(cfg, seed).unwrap();
        let mut opt = predictor::train::AdamState::new(&model);
        let env = |k: &str, d: f32| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
        let mut tc = predictor::train::TrainConfig { epochs, ..Default::default() };
        tc.adam.lr = env("LR", tc.adam.lr);
        tc.batch_size = env("BATCH", tc.batch_size as f32) as usize;
        tc.patience = env("PATIENCE", tc.patience as f32) as usize;
        for spec in std::env::var("SCALE").unwrap_or_default().split(',').filter(|x| !x.is_empty()) {
            let (name, f) = spec.split_once('=').unwrap();
            assert!(tc.adam.scale(name, f.parse().unwrap()), "no tensor {name}");
        }
        let report = predictor::train::train(&mut model, &mut opt, &train, &valid, &tc, &mut || false).unwrap();
        // α earned on the validation lists: wins over the baseline.
        let (mut wins, mut losses) = (0.0f64, 0.0f64);
        for l in &valid_lists {
            let p = model
                .score(
                    &l.sample.query.as_query(),
                    &l.sample.candidates.iter().map(|c| c.as_candidate()).collect::<Vec<_>>(),
                )
                .unwrap();
            let np = predictor::metrics::ndcg_from_scores(&p, &l.sample.labels, 10);
            let nb = predictor::metrics::ndcg_from_scores(&l.baseline, &l.sample.labels, 10);
            if np > nb {
                wins += 1.0
            } else if nb > np {
                losses += 1.0
            }
        }
        let alpha = (1.0 - wins / (wins + losses)).clamp(0.0, 1.0) as f32;
        for l in &test {
            let cands: Vec<_> = l.sample.candidates.iter().map(|c| c.as_candidate()).collect();
            let p = model.score(&l.sample.query.as_query(), &cands).unwrap();
            accs.entry("baseline").or_default().add(&order(&l.ids, &l.baseline), &l.rel);
            accs.entry("predictor").or_default().add(&order(&l.ids, &p), &l.rel);
            cat_accs.entry((l.category, "predictor")).or_default().add(&order(&l.ids, &p), &l.rel);
            cat_accs.entry((l.category, "baseline")).or_default().add(&order(&l.ids, &l.baseline), &l.rel);
            let oracle: Vec<f32> = l.sample.labels.clone();
            cat_accs.entry((l.category, "oracle")).or_default().add(&order(&l.ids, &oracle), &l.rel);
            if fold == 0 && std::env::var_os("DUMP").is_some() {
                let ord = predictor::fusion::order_by_score(&p);
                let missed: Vec<usize> = ord
                    .iter()
                    .enumerate()
                    .filter(|(r, i)| *r >= 10 && l.rel.contains(&l.ids[**i]))
                    .map(|(_, i)| *i)
                    .collect();
                if !missed.is_empty() {
                    eprintln!("\nQ: {}", l.question);
                    for &i in &missed {
                        let r = ord.iter().position(|&x| x == i).unwrap();
                        let s = &l.sample.candidates[i].signals;
                        eprintln!(
                            "  MISS rank {} bm25 {:?} lex {:.2} nb {:.2} sess {:.2} fol {:.2}: {}",
                            r + 1,
                            s.bm25_rank,
                            s.lexical_overlap,
                            s.neighbor_score,
                            s.session_match,
                            s.follows_hit,
                            l.texts[i]
                        );
                    }
                    for &i in ord.iter().take(3) {
                        let s = &l.sample.candidates[i].signals;
                        eprintln!(
                            "  TOP  {} bm25 {:?} lex {:.2} nb {:.2}: {}",
                            if l.rel.contains(&l.ids[i]) { "*" } else { " " },
                            s.bm25_rank,
                            s.lexical_overlap,
                            s.neighbor_score,
                            l.texts[i]
                        );
                    }
                }
            }
            let rb = predictor::fusion::ranks_from_scores(&l.baseline);
            let rp = predictor::fusion::ranks_from_scores(&p);
            let n = l.ids.len() as u32;
            let fused: Vec<f32> =
                (0..l.ids.len()).map(|i| predictor::fusion::rrf(alpha, 12.0, Some(rb[i]), Some(rp[i]), n)).collect();
            accs.entry("fused").or_default().add(&order(&l.ids, &fused), &l.rel);
        }
        for e in &report.epochs {
            eprintln!(
                "  epoch {}: train {:.4} valid {:?} ndcg {:?}",
                e.epoch, e.train_loss, e.valid_loss, e.valid_ndcg10
            );
        }
        eprintln!("  initial valid {:?}", report.initial_valid);
        println!(
            "fold {fold}: {} train, {} test, epochs {}, best {:?}, stop {:?}, alpha {alpha:.2}, {:.1} s",
            train.len(),
            test.len(),
            report.epochs.len(),
            report.best_epoch,
            report.stop,
            t.elapsed().as_secs_f64()
        );
    }
    for (name, acc) in &accs {
        println!("{}", acc.line(name));
    }
    for ((cat, name), acc) in &cat_accs {
        println!("cat {cat} {}", acc.line(name));
    }
    println!("{:.1} s", t0.elapsed().as_secs_f64());
}
