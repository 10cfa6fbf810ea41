//! Gotchas the agent diagnosed: "The issue is that the e-conomic API returns
//! an object, not an array", said after something went wrong, is a fact about
//! a tool, a library or the environment that the next session should know.
//!
//! Most diagnoses are about the code being written ("the problem is in the
//! `renderWithData` method"): those are fixed by the edit that follows and
//! teach nothing later. A diagnosis is kept only when
//! - it opens with a diagnosis ("the issue/problem/cause is", "root cause:",
//!   "this happens because", and the same in French, Portuguese, Czech,
//!   Chinese and Japanese) and states the cause in the same sentence;
//! - it is not hedged ("likely", "might", "可能"), not about the agent's own
//!   work ("I changed", "our fix"), and names no code of the project (a
//!   method, a function, a line, a `camelCase` name, "the code");
//! - it names something outside the code: a product or tool by its proper
//!   name, an acronym, a version, a default;
//! - something went wrong just before: a command failed, or the user reported
//!   an error or that something does not work.

use shared::domain::memory::quality;

use super::lingua::{self, contains_word};

/// Sentence openers that announce a diagnosis, lower case.
const OPENERS: &[&str] = &[
    "the root cause is that",
    "the root cause is",
    "the root cause was",
    "the real issue is that",
    "the real problem is that",
    "the actual issue is that",
    "the actual problem is that",
    "the underlying issue is that",
    "the issue is that",
    "the issue is with",
    "the problem is with",
    "the issue was that",
    "the problem is that",
    "the problem was that",
    "the cause is that",
    "the culprit is",
    "root cause:",
    "root cause confirmed:",
    "root cause confirmed/fixed:",
    "this happens because",
    "this happened because",
    "this fails because",
    "this failed because",
    "the error occurs because",
    "the error happens because",
    "the error is because",
    "le problème est que",
    "le problème vient de",
    "la cause est que",
    "o problema é que",
    "o problema era que",
    "problém je v tom, že",
    "problém je, že",
    "问题是",
    "问题在于",
    "原因是",
    "根本原因是",
    "根本原因：",
    "問題は",
    "原因は",
];

/// What a diagnosis sentence may be preceded by ("I see the problem. The issue is that …").
const LEAD_INS: &[&str] = &["found it", "i see", "看到了", "我看到问题了", "找到了", "ok", "okay"];

/// Words that hedge a diagnosis.
const HEDGES: &[&str] = &[
    "likely",
    "probably",
    "might",
    "may",
    "maybe",
    "perhaps",
    "possibly",
    "seems",
    "appears",
    "could be",
    "probablement",
    "peut-être",
    "provavelmente",
    "talvez",
    "pravděpodobně",
    "možná",
    "可能",
    "似乎",
    "也许",
    "好像",
    "おそらく",
    "たぶん",
    "かもしれ",
];

/// Words of the agent's own work.
const SELF: &[&str] = &["i", "i'm", "i've", "we", "we're", "our", "my", "me", "我们", "我的"];

/// Words that place the cause in the code being written.
const CODE: &[&str] = &[
    "line",
    "method",
    "function",
    "variable",
    "component",
    "the code",
    "frontend",
    "backend",
    "代码",
    "前端",
    "后端",
    "组件",
    "函数",
    "方法",
];

/// Words of trouble in what the user or a tool said.
pub const TROUBLE: &[&str] = &[
    "error",
    "exception",
    "failed",
    "failure",
    "traceback",
    "cannot",
    "can't",
    "could not",
    "couldn't",
    "not found",
    "denied",
    "refused",
    "doesn't work",
    "does not work",
    "not working",
    "not able",
    "still",
    "erreur",
    "échec",
    "ne marche",
    "ne fonctionne",
    "erro",
    "falhou",
    "não funciona",
    "chyba",
    "nefunguje",
    "fehler",
    "funktioniert nicht",
    "错误",
    "失败",
    "报错",
    "没",
    "不行",
    "エラー",
    "失敗",
    "できない",
    "動かない",
];

/// Whether `text` (a user's message or a tool's output) tells of trouble;
/// only its first 600 bytes are read (an error opens an output).
pub fn troubled(text: &str) -> bool {
    let mut end = text.len().min(600);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let l = text[..end].to_lowercase();
    TROUBLE.iter().any(|t| contains_word(&l, t))
}

/// The gotcha a sentence of the agent states, without its opener, if it is a
/// diagnosis worth keeping (see the module docs). The caller checks that
/// something went wrong before it.
pub fn gotcha(sentence: &str) -> Option<String> {
    let s = sentence.trim().trim_start_matches(['#', '*', '-', ' ', '>']).trim();
    let l = s.to_lowercase().replace(['’', '‘'], "'");
    let mut at = 0;
    for lead in LEAD_INS {
        if let Some(rest) = l.strip_prefix(lead) {
            // The lead-in is its own clause ("I see the problem.", "看到了！",
            // "I see the issue - …").
            if let Some(p) = rest.find(['.', '!', '。', '！', ':', '-', '—']) {
                at = lead.len() + p + rest[p..].chars().next().map_or(1, char::len_utf8);
                break;
            }
        }
    }
    let rest_l = l[at..].trim_start_matches(|c: char| c.is_whitespace() || c == '*');
    let opener = OPENERS.iter().find(|o| rest_l.starts_with(**o))?;
    let start = l.len() - rest_l.len() + opener.len();
    let cause =
        s.get(start..)?.trim_start_matches(|c: char| c.is_whitespace() || matches!(c, ':' | '：' | ',' | '，' | '*'));
    let cause_l = cause.to_lowercase();
    if quality::words(cause) < 5 || cause.trim_end().ends_with([':', '：']) {
        return None;
    }
    if HEDGES.iter().any(|h| contains_word(&l, h)) || SELF.iter().any(|w| contains_word(&cause_l, w)) {
        return None;
    }
    if CODE.iter().any(|w| contains_word(&cause_l, w)) || names_project_code(cause) {
        return None;
    }
    if !names_outside_thing(cause) {
        return None;
    }
    let mut chars = cause.chars();
    let first = chars.next()?;
    Some(format!("{}{}", first.to_uppercase(), chars.as_str()))
}

/// A `camelCase` name: the project's own code ("`getStateKey`", "teamColorMap").
fn names_project_code(s: &str) -> bool {
    s.split(|c: char| !(c.is_alphanumeric() || c == '_')).any(|w| {
        let mut cs = w.chars();
        cs.next().is_some_and(|c| c.is_ascii_lowercase())
            && w.chars().any(|c| c.is_ascii_uppercase())
            && w.chars().all(|c| c.is_ascii_alphanumeric())
    })
}

/// A product or tool by its proper name ("PowerShell", "Aspire"), an acronym
/// ("API", "IPv4"), a version ("13.4", "v3") or a default.
fn names_outside_thing(s: &str) -> bool {
    let l = s.to_lowercase();
    if ["default", "version", "默认", "版本", "デフォルト", "par défaut", "por padrão", "výchozí"]
        .iter()
        .any(|w| l.contains(w))
    {
        return true;
    }
    let words: Vec<&str> =
        s.split(|c: char| c.is_whitespace() || matches!(c, '*' | '`' | '(' | ')' | ',' | '，' | '（' | '）')).collect();
    words.iter().enumerate().any(|(i, w)| {
        let w = w.trim_matches(|c: char| !c.is_alphanumeric());
        let mut cs = w.chars();
        let Some(first) = cs.next() else { return false };
        let proper = i > 0
            && first.is_ascii_uppercase()
            && w.chars().count() >= 3
            && w.chars().all(|c| c.is_alphanumeric() || matches!(c, '.' | '+' | '-'));
        let acronym = w.chars().take_while(char::is_ascii_uppercase).count() >= 2;
        let version = {
            let v = w.strip_prefix(['v', 'V']).unwrap_or(w);
            v.split('.').count() >= 2 && v.split('.').all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit()))
                || (w.starts_with(['v', 'V']) && v.chars().all(|c| c.is_ascii_digit()) && !v.is_empty())
        };
        proper || acronym || version
    }) || lingua::guess(s) != lingua::Lang::En
        && s.split(|c: char| !c.is_ascii_alphanumeric())
            .any(|w| w.len() >= 3 && w.chars().next().is_some_and(|c| c.is_ascii_uppercase()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn diagnoses_of_tools_are_gotchas() {
        assert_eq!(
            gotcha("The issue is that the e-conomic API returns a JSON object with a collection property, not a direct array.")
                .as_deref(),
            Some("The e-conomic API returns a JSON object with a collection property, not a direct array.")
        );
        assert_eq!(
            gotcha(
                "Root cause: Aspire 13.4.6 defaults to PostgreSQL 18, which is incompatible with the existing volume."
            )
            .as_deref(),
            Some("Aspire 13.4.6 defaults to PostgreSQL 18, which is incompatible with the existing volume.")
        );
        assert!(
            gotcha("问题是 Python 的 `load_dotenv()` 默认只加载 `.env` 文件，不会自动加载 `.env.local`。").is_some()
        );
        assert!(
            gotcha(
                "I see the problem. The issue is that Vite only exposes variables prefixed with VITE_ to the client."
            )
            .is_some()
        );
    }

    #[test]
    fn diagnoses_of_the_code_at_hand_are_not() {
        assert!(gotcha("The issue is that the `getStateKey` method only considers the filter state.").is_none());
        assert!(gotcha("The problem is in line 448 where it reads the old column.").is_none());
        assert!(gotcha("The issue is likely that Sales preloads the associations even though they're nil.").is_none());
        assert!(
            gotcha("The problem is that I changed the CSV headers but the code still uses the old names.").is_none()
        );
        assert!(gotcha("The problem is clear.").is_none());
        assert!(gotcha("The issue was that the table was losing its colors because:").is_none());
        assert!(gotcha("The problem is that the content block needs to be re-rendered after the update.").is_none());
        assert!(gotcha("We use pnpm here.").is_none());
    }

    #[test]
    fn trouble_is_errors_and_complaints() {
        assert!(troubled("Error: Unable to resolve action `aquasecurity/trivy-action@0.30.0`"));
        assert!(troubled("it still shows the old value"));
        assert!(troubled("没切换过来"));
        assert!(!troubled("Looks good, thanks"));
        assert!(!troubled("the errorless path"));
    }
}
