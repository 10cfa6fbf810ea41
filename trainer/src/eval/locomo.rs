//! The LoCoMo dataset (`locomo10.json` layout): conversations, turns, questions
//! and observations, with evidence ids normalised and every repair counted.
//!
//! The loader is strict about the file's shape (a JSON list of conversations
//! with their sessions) and lenient about known quirks of individual
//! questions, which it repairs or excludes and counts in [`Notes`], never
//! silently: evidence ids joined in one string (`"D8:6; D9:17"`), a stray
//! colon (`"D:11:26"`), ids that name no turn, questions without evidence.

use std::collections::BTreeSet;
use std::path::Path;

use serde::Serialize;
use serde_json::Value;
use shared::base::time::Ts;

use crate::error::{Error, Result};

/// Question categories used for retrieval (5, adversarial, has no answer to retrieve).
pub const RETRIEVAL_CATEGORIES: std::ops::RangeInclusive<u8> = 1..=4;

/// Names of the categories, by number.
pub fn category_name(category: u8) -> &'static str {
    match category {
        1 => "multi-hop",
        2 => "temporal",
        3 => "open-domain",
        4 => "single-hop",
        5 => "adversarial",
        _ => "unknown",
    }
}

/// One turn of a session.
#[derive(Clone, Debug)]
pub struct Turn {
    /// `"Dk:j"`: turn `j` of session `k`.
    pub dia_id: String,
    /// Who said it.
    pub speaker: String,
    /// What was said, with an image's caption appended as `[shares a photo: …]`.
    pub text: String,
}

/// One session of a conversation.
#[derive(Clone, Debug)]
pub struct Session {
    /// `k` of `session_k`.
    pub index: u32,
    /// When it took place.
    pub date: Ts,
    /// Its turns in order.
    pub turns: Vec<Turn>,
}

/// A question with its evidence turns.
#[derive(Clone, Debug)]
pub struct Question {
    /// Position among the conversation's questions (all categories).
    pub index: usize,
    /// The question.
    pub text: String,
    /// 1 multi-hop, 2 temporal, 3 open-domain, 4 single-hop, 5 adversarial.
    pub category: u8,
    /// Normalised evidence turn ids that name a turn of the conversation.
    pub evidence: BTreeSet<String>,
}

/// An observation (a fact LoCoMo's authors extracted from a turn).
#[derive(Clone, Debug)]
pub struct Observation {
    /// Session it belongs to.
    pub session: u32,
    /// Whose fact.
    pub speaker: String,
    /// The fact.
    pub text: String,
    /// The turn it was extracted from.
    pub dia_id: String,
}

/// One conversation: one user of the memory system.
#[derive(Clone, Debug)]
pub struct Conversation {
    /// `sample_id`.
    pub id: String,
    /// Sessions in order.
    pub sessions: Vec<Session>,
    /// All questions, every category.
    pub questions: Vec<Question>,
    /// Observations whose source turn exists.
    pub observations: Vec<Observation>,
}

impl Conversation {
    /// The questions retrieval is measured on: categories 1–4 with evidence.
    pub fn retrieval_questions(&self) -> impl Iterator<Item = &Question> {
        self.questions.iter().filter(|q| RETRIEVAL_CATEGORIES.contains(&q.category) && !q.evidence.is_empty())
    }

    /// The moment the questions are asked: a day after the last session.
    pub fn query_time(&self) -> Ts {
        self.sessions.iter().map(|s| s.date).max().unwrap_or(Ts(0)).plus_millis(86_400_000)
    }
}

/// What the loader repaired or left out.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct Notes {
    /// Evidence strings that needed repair (joined lists, stray colons).
    pub evidence_repaired: usize,
    /// Evidence ids that name no turn of their conversation (dropped).
    pub evidence_unknown: usize,
    /// Retrieval questions (categories 1–4) left without evidence (excluded).
    pub questions_without_evidence: usize,
    /// Observations whose source turn does not exist (dropped).
    pub observations_unknown_turn: usize,
    /// `session_k_date_time` keys without a session.
    pub dates_without_session: usize,
}

/// The parsed dataset.
#[derive(Clone, Debug)]
pub struct Dataset {
    /// Conversations in file order.
    pub conversations: Vec<Conversation>,
    /// Repairs and exclusions.
    pub notes: Notes,
}

/// Parses `"1:56 pm on 8 May, 2023"`.
pub fn parse_date(text: &str) -> Option<Ts> {
    let (time, date) = text.split_once(" on ")?;
    let (hm, half) = time.trim().split_once(' ')?;
    let (h, m) = hm.split_once(':')?;
    let mut hour: u32 = h.trim().parse().ok()?;
    let minute: u32 = m.trim().parse().ok()?;
    if hour > 12 || minute > 59 {
        return None;
    }
    match half.to_ascii_lowercase().as_str() {
        "pm" if hour != 12 => hour += 12,
        "am" if hour == 12 => hour = 0,
        "am" | "pm" => {}
        _ => return None,
    }
    let parts: Vec<&str> = date.split([' ', ',']).filter(|p| !p.is_empty()).collect();
    let [day, month, year] = parts.as_slice() else { return None };
    let day: u32 = day.parse().ok()?;
    let month = shared::base::text::MONTH_NAMES.iter().position(|name| name.eq_ignore_ascii_case(month))? as u32 + 1;
    let year: i32 = year.parse().ok()?;
    if !(1..=31).contains(&day) {
        return None;
    }
    Some(Ts::from_civil(year, month, day, hour, minute, 0))
}

/// Splits and repairs one raw evidence string into turn ids; `true` when it needed repair.
pub fn normalise_evidence(raw: &str) -> (Vec<String>, bool) {
    let mut ids = Vec::new();
    let mut repaired = false;
    let pieces: Vec<&str> = raw.split([';', ',', ' ']).filter(|p| !p.is_empty()).collect();
    if pieces.len() != 1 || pieces[0] != raw {
        repaired = true;
    }
    for piece in pieces {
        let body = piece.strip_prefix('D').map(|rest| rest.trim_start_matches(':'));
        let id = body.and_then(|b| {
            let (k, j) = b.split_once(':')?;
            let num = |s: &str| if s.bytes().all(|c| c.is_ascii_digit()) { s.parse::<u32>().ok() } else { None };
            Some(format!("D{}:{}", num(k)?, num(j)?))
        });
        match id {
            Some(id) => {
                if id != piece {
                    repaired = true;
                }
                ids.push(id);
            }
            None => repaired = true,
        }
    }
    (ids, repaired)
}

/// Loads a dataset file.
pub fn load(path: &Path) -> Result<Dataset> {
    let bytes = std::fs::read(path).map_err(|e| Error::io("read dataset", path, e))?;
    let value: Value = serde_json::from_slice(&bytes).map_err(|e| Error::Dataset {
        path: path.to_path_buf(),
        line: e.line(),
        reason: e.to_string(),
    })?;
    parse(&value).map_err(|reason| Error::Dataset { path: path.to_path_buf(), line: 1, reason })
}

/// Parses the dataset from JSON (see [`load`]).
pub fn parse(value: &Value) -> std::result::Result<Dataset, String> {
    let items = value.as_array().ok_or("the dataset is not a JSON list of conversations")?;
    let mut notes = Notes::default();
    let mut conversations = Vec::with_capacity(items.len());
    for (n, item) in items.iter().enumerate() {
        let id =
            item.get("sample_id").and_then(Value::as_str).map_or_else(|| format!("conversation-{n}"), str::to_owned);
        let conv = item.get("conversation").and_then(Value::as_object).ok_or(format!("{id}: no \"conversation\""))?;
        let mut sessions = Vec::new();
        let mut indices: Vec<u32> =
            conv.keys().filter_map(|k| k.strip_prefix("session_").and_then(|rest| rest.parse::<u32>().ok())).collect();
        indices.sort_unstable();
        for k in indices {
            let Some(turns) = conv.get(&format!("session_{k}")).and_then(Value::as_array) else { continue };
            let date_text = conv.get(&format!("session_{k}_date_time")).and_then(Value::as_str).unwrap_or("");
            let date = parse_date(date_text).ok_or(format!("{id}: session_{k} has no readable date: {date_text:?}"))?;
            let turns = turns
                .iter()
                .filter_map(|t| {
                    let dia_id = t.get("dia_id").and_then(Value::as_str)?.to_owned();
                    let mut text = t.get("text").and_then(Value::as_str).unwrap_or("").to_owned();
                    if let Some(caption) = t.get("blip_caption").and_then(Value::as_str) {
                        text.push_str(" [shares a photo: ");
                        text.push_str(caption);
                        text.push(']');
                    }
                    let speaker = t.get("speaker").and_then(Value::as_str).unwrap_or("").to_owned();
                    Some(Turn { dia_id, speaker, text })
                })
                .collect();
            sessions.push(Session { index: k, date, turns });
        }
        notes.dates_without_session += conv
            .keys()
            .filter_map(|k| k.strip_prefix("session_").and_then(|r| r.strip_suffix("_date_time")))
            .filter(|k| !conv.get(&format!("session_{k}")).is_some_and(Value::is_array))
            .count();
        let turn_ids: BTreeSet<&str> =
            sessions.iter().flat_map(|s| s.turns.iter().map(|t| t.dia_id.as_str())).collect();
        let mut questions = Vec::new();
        for (index, q) in item.get("qa").and_then(Value::as_array).map_or(&[][..], Vec::as_slice).iter().enumerate() {
            let category = q.get("category").and_then(Value::as_u64).and_then(|c| u8::try_from(c).ok()).unwrap_or(0);
            let mut evidence = BTreeSet::new();
            for raw in q.get("evidence").and_then(Value::as_array).map_or(&[][..], Vec::as_slice) {
                let Some(raw) = raw.as_str() else {
                    notes.evidence_repaired += 1;
                    continue;
                };
                let (ids, repaired) = normalise_evidence(raw);
                notes.evidence_repaired += usize::from(repaired);
                for e in ids {
                    if turn_ids.contains(e.as_str()) {
                        evidence.insert(e);
                    } else {
                        notes.evidence_unknown += 1;
                    }
                }
            }
            if RETRIEVAL_CATEGORIES.contains(&category) && evidence.is_empty() {
                notes.questions_without_evidence += 1;
            }
            let text = q.get("question").and_then(Value::as_str).unwrap_or("").to_owned();
            questions.push(Question { index, text, category, evidence });
        }
        let mut observations = Vec::new();
        if let Some(obs) = item.get("observation").and_then(Value::as_object) {
            for (key, by_speaker) in obs {
                let Some(session) = key
                    .strip_prefix("session_")
                    .and_then(|r| r.strip_suffix("_observation"))
                    .and_then(|k| k.parse::<u32>().ok())
                else {
                    continue;
                };
                for (speaker, facts) in by_speaker.as_object().into_iter().flatten() {
                    for fact in facts.as_array().map_or(&[][..], Vec::as_slice) {
                        let (Some(text), Some(source)) =
                            (fact.get(0).and_then(Value::as_str), fact.get(1).and_then(Value::as_str))
                        else {
                            notes.observations_unknown_turn += 1;
                            continue;
                        };
                        let (ids, _) = normalise_evidence(source);
                        match ids.into_iter().find(|d| turn_ids.contains(d.as_str())) {
                            Some(dia_id) => observations.push(Observation {
                                session,
                                speaker: speaker.clone(),
                                text: text.to_owned(),
                                dia_id,
                            }),
                            None => notes.observations_unknown_turn += 1,
                        }
                    }
                }
            }
        }
        observations.sort_by_key(|o| o.session);
        conversations.push(Conversation { id, sessions, questions, observations });
    }
    Ok(Dataset { conversations, notes })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_quirks_are_repaired_and_counted() {
        assert_eq!(normalise_evidence("D1:3"), (vec!["D1:3".to_owned()], false));
        assert_eq!(normalise_evidence("D8:6; D9:17"), (vec!["D8:6".to_owned(), "D9:17".to_owned()], true));
        assert_eq!(normalise_evidence("D:11:26"), (vec!["D11:26".to_owned()], true));
        assert_eq!(normalise_evidence("D1:2 D1:4"), (vec!["D1:2".to_owned(), "D1:4".to_owned()], true));
        assert_eq!(normalise_evidence("junk"), (vec![], true));
    }

    #[test]
    fn dates_parse_and_bad_ones_are_refused() {
        let t = parse_date("1:56 pm on 8 May, 2023").expect("date");
        assert_eq!(t, Ts::from_civil(2023, 5, 8, 13, 56, 0));
        assert_eq!(parse_date("12:01 am on 1 January, 2020"), Some(Ts::from_civil(2020, 1, 1, 0, 1, 0)));
        assert_eq!(parse_date("13:01 pm on 1 January, 2020"), None);
        assert_eq!(parse_date("1:00 pm on 1 Smarch, 2020"), None);
    }

    #[test]
    fn a_small_conversation_parses_with_its_quirks_counted() {
        let v = serde_json::json!([{
            "sample_id": "c1",
            "conversation": {
                "speaker_a": "Ann", "speaker_b": "Bob",
                "session_1_date_time": "1:00 pm on 1 May, 2023",
                "session_1": [
                    {"speaker": "Ann", "dia_id": "D1:1", "text": "I adopted a cat."},
                    {"speaker": "Bob", "dia_id": "D1:2", "text": "Nice!", "blip_caption": "a cat on a sofa"}
                ],
                "session_2_date_time": "2:00 pm on 3 May, 2023"
            },
            "qa": [
                {"question": "What did Ann adopt?", "answer": "a cat", "evidence": ["D1:1; D1:2"], "category": 4},
                {"question": "Unknown?", "answer": "x", "evidence": ["D7:1"], "category": 1},
                {"question": "Adversarial?", "adversarial_answer": "y", "evidence": [], "category": 5}
            ],
            "observation": {"session_1_observation": {"Ann": [["Ann has a cat.", "D1:1"], ["Lost.", "D9:9"]]}}
        }]);
        let d = parse(&v).expect("parses");
        let c = &d.conversations[0];
        assert_eq!(c.sessions.len(), 1);
        assert_eq!(c.sessions[0].turns[1].text, "Nice! [shares a photo: a cat on a sofa]");
        assert_eq!(c.retrieval_questions().count(), 1);
        assert_eq!(c.questions[0].evidence.len(), 2);
        assert_eq!(c.observations.len(), 1);
        assert_eq!(
            d.notes,
            Notes {
                evidence_repaired: 1,
                evidence_unknown: 1,
                questions_without_evidence: 1,
                observations_unknown_turn: 1,
                dates_without_session: 1,
            }
        );
        assert_eq!(c.query_time(), Ts::from_civil(2023, 5, 2, 13, 0, 0));
    }

    #[test]
    fn a_file_that_is_not_a_list_is_refused() {
        assert!(parse(&serde_json::json!({"a": 1})).is_err());
        assert!(parse(&serde_json::json!([{"sample_id": "x"}])).is_err());
    }
}
