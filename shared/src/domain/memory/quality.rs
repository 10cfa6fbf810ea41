//! Whether a memory's text stands alone: one self-contained statement a
//! later session can act on, not a fragment, a question, a line of a log or
//! of code, a sentence that points at something it does not name, or text a
//! harness put around the user's words.
//!
//! Extraction keeps only texts without a [`Defect`], and injection skips a
//! stored memory that has one (an older version may have learned it). The
//! checks are about form, not meaning, and work in any language: they look
//! at punctuation, word counts (a CJK character counts as a word), and a few
//! closed lists (pronouns that point back, error markers of tools).

use std::fmt;

/// Why a text is not a stand-alone memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Defect {
    /// Too few words to state anything ("You should be.").
    Fragment,
    /// A question, not a statement.
    Question,
    /// Begins by pointing at something it does not name ("That's not right.").
    Dangling,
    /// Stops where something should follow (a colon, a comma, "e.g.", an
    /// open parenthesis or quote).
    Unfinished,
    /// A line of a log, a stack trace, a compiler's or a tool's error.
    LogLine,
    /// A line of code.
    CodeLine,
    /// Text a harness put around the user's words (an IDE notification, a
    /// plan-mode instruction).
    HarnessText,
}

impl Defect {
    /// A few words for logs and `--verbose` listings.
    pub fn describe(self) -> &'static str {
        match self {
            Defect::Fragment => "a fragment",
            Defect::Question => "a question",
            Defect::Dangling => "points at something it does not name",
            Defect::Unfinished => "unfinished",
            Defect::LogLine => "a log or error line",
            Defect::CodeLine => "a line of code",
            Defect::HarnessText => "harness text",
        }
    }
}

impl fmt::Display for Defect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.describe())
    }
}

/// Fewest words a memory may have.
const MIN_WORDS: usize = 4;

/// The first defect of `text`, or `None` when it stands alone.
pub fn defect(text: &str) -> Option<Defect> {
    let t = text.trim();
    if harness_text(t) {
        return Some(Defect::HarnessText);
    }
    if log_line(t) {
        return Some(Defect::LogLine);
    }
    if code_line(t) {
        return Some(Defect::CodeLine);
    }
    if words(t) < MIN_WORDS {
        return Some(Defect::Fragment);
    }
    let end = t.trim_end_matches(['"', '\'', '”', '’', ')', '*', '_', ' ']);
    if end.ends_with('?') || end.ends_with('？') {
        return Some(Defect::Question);
    }
    if unfinished(t) {
        return Some(Defect::Unfinished);
    }
    if dangling(t) {
        return Some(Defect::Dangling);
    }
    None
}

/// Whether `text` stands alone (see [`defect`]).
pub fn stands_alone(text: &str) -> bool {
    defect(text).is_none()
}

/// Words: runs of letters or digits, and each CJK, kana or hangul character.
pub fn words(text: &str) -> usize {
    let mut n = 0;
    let mut in_word = false;
    for c in text.chars() {
        if is_cjk(c) {
            n += 1;
            in_word = false;
        } else if c.is_alphanumeric() || c == '_' {
            if !in_word {
                n += 1;
            }
            in_word = true;
        } else {
            in_word = false;
        }
    }
    n
}

/// A character written without spaces between words (Chinese, Japanese, Korean).
pub fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF)
}

/// Tags that wrap text a harness or an IDE adds to a user's turn.
const HARNESS_TAGS: &[&str] = &[
    "system_notification",
    "system-notification",
    "user_query",
    "task-notification",
    "system-reminder",
    "ide_opened_file",
    "ide_selection",
    "ide_diagnostics",
    "command-name",
    "command-message",
    "command-args",
    "local-command-stdout",
    "local-command-stderr",
    "user-prompt-submit-hook",
    "environment_context",
];

fn harness_text(t: &str) -> bool {
    HARNESS_TAGS.iter().any(|tag| {
        let open = format!("<{tag}>");
        let close = format!("</{tag}>");
        t.contains(&open) || t.contains(&close)
    })
}

/// Markers of a tool's error output at the start of a line.
const ERROR_STARTS: &[&str] = &[
    "error:",
    "error[",
    "fatal:",
    "warning:",
    "panic:",
    "traceback (most recent call last)",
    "exception in thread",
    "npm err!",
    "npm error",
    "err!",
    "failed:",
    "uncaught ",
    "unhandled ",
];

fn log_line(t: &str) -> bool {
    let lower = t.to_lowercase();
    if ERROR_STARTS.iter().any(|m| lower.starts_with(m)) {
        return true;
    }
    // `TypeError: …`, `ModuleNotFoundError: …`, `java.lang.IllegalStateException: …`.
    if let Some((head, _)) = t.split_once(": ")
        && !head.contains(' ')
        && (head.ends_with("Error") || head.ends_with("Exception"))
    {
        return true;
    }
    // A source line quoted with its number (`80 | throw …`, `  12: let x`).
    let digits = t.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && t[digits..].trim_start().starts_with(['|', ':']) {
        return true;
    }
    // A stack frame or a timestamped log line.
    lower.starts_with("at ") && t.contains(':') && (t.contains('(') || t.contains('/'))
        || t.starts_with('[') && t[1..].chars().take(4).all(|c| c.is_ascii_digit())
}

fn code_line(t: &str) -> bool {
    let end = t.trim_end();
    if end.ends_with(';') || end.ends_with('{') || end.ends_with("};") || end.starts_with("```") {
        return true;
    }
    let starts = ["$ ", "> ", ">>> ", "#include", "import ", "from ", "def ", "fn ", "function ", "const ", "let "];
    if starts.iter().any(|s| t.starts_with(s)) && !t.contains(". ") && !t.ends_with('.') {
        return true;
    }
    // Mostly symbols: more than a third of the non-space characters are not letters.
    let (mut letters, mut other) = (0usize, 0usize);
    for c in t.chars().filter(|c| !c.is_whitespace()) {
        if c.is_alphabetic() {
            letters += 1;
        } else {
            other += 1;
        }
    }
    letters + other >= 12 && other * 3 > (letters + other) * 2
}

fn unfinished(t: &str) -> bool {
    // "… under:." is still open: the final stop was added after the colon.
    let end = t.trim_end();
    let end = end.strip_suffix('.').filter(|e| e.ends_with([':', ','])).unwrap_or(end);
    if end.ends_with([':', ',', ';', '(', '[', '{', '-', '–', '—', '/', '：', '，', '、']) {
        return true;
    }
    let lower = end.to_lowercase();
    if ["e.g.", "i.e.", "etc. (", "such as", "like", "and", "or", "the", "a", "to", "with"]
        .iter()
        .any(|w| lower.ends_with(&format!(" {w}")) || lower.ends_with(&format!(" {w}.")))
    {
        return true;
    }
    // A text Engram shortened (a quoted error cut at `…`) may leave a mark
    // open on purpose; only an uncut text is unfinished by its marks.
    if end.contains('…') {
        return false;
    }
    let count = |c: char| end.chars().filter(|x| *x == c).count();
    count('(') > count(')') || count('[') > count(']') || count('`') % 2 == 1 || count('"') % 2 == 1
}

/// Words that point back at something said before, when a text starts with
/// them and a verb follows ("It still fails", "That's wrong", "Ça ne marche
/// pas", "これは違う").
const POINTERS: &[&str] = &["it", "that", "they", "he", "she", "ça", "cela", "isso", "isto", "eso", "esto"];
/// Demonstratives that point back only when a verb follows directly
/// ("This is wrong"), not when a noun does ("This repo uses pnpm").
const DEMONSTRATIVES: &[&str] = &["this", "these", "those", "ce", "ceci", "esta", "este"];
const VERBS_AFTER: &[&str] = &[
    "is", "isn't", "was", "wasn't", "are", "were", "does", "doesn't", "did", "didn't", "should", "will", "won't",
    "still", "also", "just", "seems", "looks", "works", "breaks", "fails", "isnt", "doesnt", "n'est", "est", "não",
    "no",
];
/// CJK demonstratives that begin a sentence pointing back.
const CJK_POINTERS: &[&str] = &["这个", "那个", "这样", "那样", "它", "これ", "それ", "あれ", "この", "その"];

fn dangling(t: &str) -> bool {
    // A short sentence: about a dozen words, two characters a word.
    if CJK_POINTERS.iter().any(|p| t.starts_with(p)) && t.chars().filter(|&c| is_cjk(c)).count() < 24 {
        return true;
    }
    let lower = t.to_lowercase();
    let mut it = lower.split(|c: char| c.is_whitespace() || c == ',').filter(|w| !w.is_empty());
    let Some(first) = it.next() else { return false };
    let first = first.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'');
    // "that's", "it's", "c'est".
    let (head, contracted) = match first.split_once('\'') {
        Some((h, _)) => (h, true),
        None => (first, false),
    };
    // "It is fine to …", "it's better to …": an impersonal rule, not a pointer.
    let impersonal = head == "it" && lower.split_whitespace().skip(1).take(4).any(|w| w == "to");
    // "It's `make test`, not `go test`": the pointer is followed by the thing
    // it names, so the sentence carries its own subject.
    let names_it = it.clone().next().is_some_and(|w| w.starts_with('`'));
    if POINTERS.contains(&head)
        && !impersonal
        && !names_it
        && (contracted || it.clone().next().is_some_and(|w| VERBS_AFTER.contains(&w)))
    {
        return true;
    }
    if head == "c" && contracted {
        return true;
    }
    DEMONSTRATIVES.contains(&head) && it.next().is_some_and(|w| VERBS_AFTER.contains(&w))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_that_stand_alone_pass() {
        for t in [
            "Use pnpm, not npm, in this repo: the lockfile is pnpm's.",
            "Always run the migrations before the integration tests.",
            "This repo keeps its fixtures under tests/data.",
            "Never push to main directly; open a pull request.",
            "Répondez toujours en français dans ce projet.",
            "提交代码之前先运行单元测试。",
            "コミットする前に必ずテストを実行してください。",
            "It is fine to skip the linter for generated files in build/.",
        ] {
            assert_eq!(defect(t), None, "{t}");
        }
    }

    #[test]
    fn fragments_questions_and_pointers_fail() {
        assert_eq!(defect("You should be."), Some(Defect::Fragment));
        assert_eq!(defect("Why are the tests so slow on CI?"), Some(Defect::Question));
        assert_eq!(defect("That's not right, try the other format."), Some(Defect::Dangling));
        assert_eq!(defect("It still lists the old entries after the reload."), Some(Defect::Dangling));
        assert_eq!(defect("This is wrong, the config lives elsewhere."), Some(Defect::Dangling));
        assert_eq!(defect("It's `make test`, not `go test`, the makefile sets the build tags."), None);
        assert_eq!(defect("それはまだ動かないので確認して"), Some(Defect::Dangling));
        assert_eq!(defect("Only keep the data files under:"), Some(Defect::Unfinished));
        assert_eq!(defect("Pick a logger, e.g."), Some(Defect::Unfinished));
        assert_eq!(defect("Call the helper (the one in utils"), Some(Defect::Unfinished));
        assert_eq!(
            defect(
                "Run `docker compose up -d db` before `pytest` (it fails with \"E   psycopg.OperationalError: \"loc…\" otherwise)."
            ),
            None
        );
    }

    #[test]
    fn logs_code_and_harness_text_fail() {
        assert_eq!(defect("Error: Status must be one of OPEN or CLOSED."), Some(Defect::LogLine));
        assert_eq!(defect("KeyError: 'name' was raised by the loader"), Some(Defect::LogLine));
        assert_eq!(defect("42 |     raise ValueError(\"bad input\")"), Some(Defect::LogLine));
        assert_eq!(defect("fatal: refusing to merge unrelated histories"), Some(Defect::LogLine));
        assert_eq!(defect("const total = items.reduce((a, b) => a + b, 0);"), Some(Defect::CodeLine));
        assert_eq!(defect("Report back when done.</user_query>"), Some(Defect::HarnessText));
    }

    #[test]
    fn words_count_cjk_characters() {
        assert_eq!(words("use pnpm here"), 3);
        assert_eq!(words("先运行测试"), 5);
        assert_eq!(words("run `cargo test` now"), 4);
    }
}
