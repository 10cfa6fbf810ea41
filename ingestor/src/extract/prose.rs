//! Reading what a person typed: sentences with their true boundaries, and
//! what each one does (states a rule, asks for a task, asks a question,
//! explains the sentence before it).
//!
//! A **rule** is how work should be done from now on ("Always run pnpm lint
//! before committing", "We use pnpm here", "Tests must run serially",
//! "Use uv, not pip"). A **request** is the task at hand ("Add a /health
//! endpoint that always returns 200"): it opens with a task verb, or its
//! "always"/"never" describes the thing to build (after "that", "which",
//! "so it"…), and it is never stored as a convention.

use shared::domain::memory::quality;

/// Words that open a request for the task at hand.
const TASK_VERBS: &[&str] = &[
    "add",
    "create",
    "implement",
    "fix",
    "write",
    "build",
    "refactor",
    "update",
    "remove",
    "delete",
    "rename",
    "move",
    "change",
    "make",
    "set",
    "setup",
    "investigate",
    "look",
    "check",
    "find",
    "show",
    "explain",
    "help",
    "debug",
    "generate",
    "convert",
    "port",
    "improve",
    "optimize",
    "optimise",
    "clean",
    "document",
    "review",
    "bump",
    "upgrade",
    "install",
    "deploy",
    "migrate",
    "replace",
    "split",
    "merge",
    "extract",
    "wire",
    "hook",
    "let's",
    "lets",
    "can",
    "could",
    "would",
    "will",
    "try",
    "go",
    "continue",
    "start",
    "finish",
    "test",
    "open",
    "read",
    "tell",
    "give",
    "list",
    "summarize",
    "summarise",
    "draft",
    "prepare",
    "support",
    "handle",
    "introduce",
    "integrate",
    "include",
    "get",
];

/// Sentence openers that state a rule (after discourse words are removed).
const RULE_OPENERS: &[&str] = &[
    "always ",
    "never ",
    "don't ",
    "dont ",
    "do not ",
    "don't ever",
    "avoid ",
    "make sure ",
    "ensure ",
    "be sure ",
    "remember to ",
    "prefer ",
    "stop ",
    "no more ",
    "from now on",
    "going forward",
    "in this repo",
    "in this project",
    "in this codebase",
    "in this team",
    "here we ",
    "only use ",
    "only run ",
    "stick to ",
    "stick with ",
    "keep using ",
    "you must ",
    "you should ",
    "you need to ",
    "you have to ",
    "you can't ",
    "you cannot ",
    "never ever",
    // A request to keep a rule is the rule: "create a rule that specifies
    // that when fixing a bug …", "remember that the staging DB is shared".
    "create a rule that",
    "add a rule that",
    "make a rule that",
    "make it a rule",
    "write a rule that",
    "remember that ",
];

/// `we …` openers that state how the project works.
const WE_VERBS: &[&str] = &[
    "use", "always", "never", "don't", "dont", "do", "prefer", "keep", "run", "must", "only", "avoid", "deploy", "pin",
    "build", "test", "write", "put", "follow", "target", "ship", "stick", "rely", "release", "require", "can't",
    "cannot", "lint", "format", "validate", "style", "squash", "rebase", "review", "generate", "store", "log", "type",
];

/// Modal words that make a statement about the project a rule by themselves
/// ("Tests must run serially").
const MODALS: &[&str] = &["must", "mustn't", "shall"];

/// Modal words that make a statement a rule only with a word of habit or a
/// general subject ("should", "needs to"): "the logout handler should also
/// clear the cookie" is the task at hand.
const WEAK_MODALS: &[&str] = &["should", "shouldn't", "need", "needs", "has", "have", "requires", "require"];

/// Words that make what is asked a one-off ("this time"): never a rule.
const ONE_OFF: &[&str] = &[
    "this time",
    "this once",
    "just once",
    "for this one",
    "today",
    "tomorrow",
    "right now",
    "for now",
    "for the moment",
    "for this pr",
    "in this pr",
    "for this spike",
    "for the demo",
    "by monday",
    "by tuesday",
    "by wednesday",
    "by thursday",
    "by friday",
    "by tonight",
    "by eod",
    "for this release",
    "for this feature",
    "for this task",
    "for this change",
    "for this ticket",
    "while you do this",
    "while you're at it",
    "while you are at it",
];

/// Words after "always"/"never" that judge rather than instruct ("always
/// nice when it's that simple").
const EVALUATIVE: &[&str] = &[
    "nice",
    "good",
    "great",
    "fun",
    "cool",
    "fine",
    "easy",
    "hard",
    "annoying",
    "painful",
    "slow",
    "fast",
    "funny",
    "weird",
    "happy",
    "glad",
    "surprising",
    "amazing",
    "awesome",
    "lovely",
];

/// What the user says they always or never manage ("I always forget the
/// flags for tar"): a confession, not a way of working.
const LAPSES: &[&str] =
    &["forget", "forgot", "mix", "confuse", "get", "lose", "mess", "misspell", "struggle", "wonder", "miss", "fail"];

/// Words after which "always"/"never" describe a state ("the CI is always
/// slow"), not a habit.
const COPULAS: &[&str] = &["is", "are", "was", "were", "been", "it's", "that's", "seems", "seem", "feels", "looks"];

/// Words after which "always"/"never" describe a thing rather than a habit.
const DESCRIBING: &[&str] = &["that", "which", "who", "it", "so", "they", "to", "will", "would", "can"];

/// Discourse words removed before a sentence is classified.
const DISCOURSE: &[&str] = &[
    "please",
    "pls",
    "plz",
    "also",
    "and",
    "but",
    "so",
    "oh",
    "ok",
    "okay",
    "by the way",
    "one more thing",
    "just",
    "hey",
    "plus",
    "again",
    "and please",
    "now",
    "then",
    "ps",
    "p.s.",
    "yes",
    "yeah",
    "yep",
];

/// Openers that flag what follows as worth keeping ("FYI, the staging
/// database is read-only"): a statement after one is a rule unless it asks
/// for something.
const FLAGS: &[&str] = &[
    "fyi",
    "btw",
    "note:",
    "note that",
    "notice that",
    "heads up",
    "heads-up",
    "keep in mind",
    "remember:",
    "remember that",
    "important:",
    "reminder:",
    "be aware",
    "be careful",
    "careful",
    "watch out",
    "beware",
    "gotcha:",
    "caveat:",
    "two things",
    "two rules",
    "three things",
    "three rules",
    "a few things",
    "a couple of things",
    "some rules",
    "ground rules",
    "for the future",
    "in the future",
    "for future reference",
    "for next time",
    "next time",
    "my rule",
    "house rule",
    "general rule",
    "rule of thumb",
];

/// Correction openers of a user message that follows the agent's work.
const CORRECTION_OPENERS: &[&str] = &[
    "no",
    "nope",
    "nah",
    "wrong",
    "stop",
    "wait",
    "hold on",
    "actually",
    "that's wrong",
    "that is wrong",
    "that's not",
    "that is not",
    "thats not",
    "not like that",
    "not that",
    "undo",
    "revert",
    "instead",
    "don't",
    "dont",
    "do not",
];

/// Phrases that make a message a correction wherever they appear.
const CORRECTION_ANYWHERE: &[&str] = &[
    "i said",
    "i told you",
    "instead of",
    "rather than",
    "not what i",
    "why did you",
    "why are you",
    "why would you",
    "you shouldn't",
    "you should not",
];

/// What a sentence does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// States how work should be done from now on.
    Rule,
    /// Asks for the task at hand.
    Request,
    /// Asks something.
    Question,
    /// Explains or elaborates the sentence before it.
    Reason,
    /// Thanks, acknowledgements, fragments, anything else.
    Other,
}

/// Abbreviations whose final dot does not end a sentence.
const ABBREVIATIONS: &[&str] = &["e.g.", "i.e.", "etc.", "vs.", "cf.", "approx.", "incl.", "no.", "fig.", "eg.", "ie."];

/// Splits text into sentences: fenced code, quoted lines and tables are
/// dropped, each line (a bullet, a paragraph) is split at `.`, `!` or `?`
/// followed by a space, but not after an abbreviation, and `;` separates two
/// sentences when both halves have four words or more.
pub fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut in_code = false;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_code = !in_code;
            continue;
        }
        if in_code || trimmed.starts_with('>') || trimmed.starts_with('|') || line.starts_with("    ") {
            continue;
        }
        let body = strip_bullet(trimmed);
        for s in split_line(body) {
            out.extend(split_semicolon(&s));
        }
    }
    out
}

/// The line without list markers ("- ", "* ", "> "); a marker must be followed
/// by a space, so a leading flag (`--reuse-db`) stays.
pub fn without_markers(line: &str) -> &str {
    let mut l = line.trim_start();
    while let Some(rest) = l.strip_prefix(['-', '*', '•', '+', '>'])
        && (rest.is_empty() || rest.starts_with(char::is_whitespace))
    {
        l = rest.trim_start();
    }
    l
}

fn strip_bullet(line: &str) -> &str {
    let l = without_markers(line);
    // "1." / "2)" numbering.
    let digits = l.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && digits <= 3 {
        let rest = &l[digits..];
        if let Some(r) = rest.strip_prefix(". ").or_else(|| rest.strip_prefix(") ")) {
            return r.trim_start();
        }
    }
    l
}

fn split_line(line: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_tick = false;
    let chars: Vec<char> = line.chars().collect();
    for (i, &c) in chars.iter().enumerate() {
        cur.push(c);
        if c == '`' {
            in_tick = !in_tick;
        }
        if in_tick {
            continue;
        }
        // Full-width stops end a sentence with no space after them.
        if matches!(c, '。' | '！' | '？') {
            let s = cur.trim().to_owned();
            if !s.is_empty() {
                out.push(s);
            }
            cur.clear();
            continue;
        }
        if !matches!(c, '.' | '!' | '?') {
            continue;
        }
        if !chars.get(i + 1).is_none_or(|n| n.is_whitespace()) {
            continue;
        }
        // A `?` or `!` standing alone before a lowercase word is code (Rust's
        // `?` operator: "propagate errors with ? instead"), not the end of a
        // question; French sets one apart too, but starts the next sentence
        // with a capital.
        if c != '.'
            && i > 0
            && chars[i - 1].is_whitespace()
            && chars[i + 1..].iter().find(|n| !n.is_whitespace()).is_some_and(|n| n.is_lowercase())
        {
            continue;
        }
        let last_word = cur.rsplit(char::is_whitespace).next().unwrap_or("").to_lowercase();
        // `./...` (Go's every package) and `e.g.` end no sentence.
        let path_dots = last_word.ends_with("...") && last_word.contains('/');
        if c == '.' && (ABBREVIATIONS.contains(&last_word.as_str()) || last_word.chars().count() == 2 || path_dots) {
            continue;
        }
        let s = cur.trim().to_owned();
        if !s.is_empty() {
            out.push(s);
        }
        cur.clear();
    }
    let s = cur.trim().to_owned();
    if !s.is_empty() {
        out.push(s);
    }
    out
}

fn split_semicolon(s: &str) -> Vec<String> {
    let parts: Vec<&str> = s.split("; ").collect();
    if parts.len() < 2 || parts.iter().any(|p| word_count(p) < 4) {
        return vec![s.to_owned()];
    }
    // "…; it breaks the lockfile": the second half explains the first.
    if parts[1..].iter().any(|p| role(p) == Role::Reason) {
        return vec![s.to_owned()];
    }
    // "We use pnpm; always run pnpm install first": one subject, one statement.
    let subjects: Vec<std::collections::BTreeSet<String>> = parts.iter().map(|p| subject_words(p)).collect();
    if subjects.iter().enumerate().any(|(i, a)| subjects[i + 1..].iter().any(|b| !a.is_disjoint(b))) {
        return vec![s.to_owned()];
    }
    parts
        .iter()
        .enumerate()
        .map(|(i, p)| {
            let p = p.trim();
            if i + 1 < parts.len() { format!("{}.", p.trim_end_matches(['.', ','])) } else { p.to_owned() }
        })
        .collect()
}

/// The words that say what a clause is about (four letters or more, or with
/// a dot, slash or underscore), minus rule words.
fn subject_words(s: &str) -> std::collections::BTreeSet<String> {
    normalize(s)
        .split(|c: char| c.is_whitespace() || matches!(c, ',' | ';' | ':' | '(' | ')' | '`' | '"'))
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()).to_owned())
        .filter(|w| {
            (w.chars().count() >= 4 || w.contains(['.', '/', '_']))
                && !matches!(
                    w.as_str(),
                    "always"
                        | "never"
                        | "must"
                        | "should"
                        | "before"
                        | "after"
                        | "first"
                        | "with"
                        | "this"
                        | "that"
                        | "here"
                        | "when"
                        | "make"
                        | "sure"
                        | "don't"
                        | "dont"
                        | "into"
                        | "from"
                        | "them"
                        | "they"
                )
        })
        .collect()
}

/// Number of words; text written without spaces (Chinese, Japanese,
/// Korean) counts a word for every two of its characters.
pub fn word_count(s: &str) -> usize {
    s.split_whitespace().map(|t| t.chars().filter(|c| quality::is_cjk(*c)).count().div_ceil(2).max(1)).sum()
}

/// Lower case with typographic apostrophes made plain.
pub fn normalize(s: &str) -> String {
    s.to_lowercase().replace(['’', '‘'], "'")
}

/// The sentence without leading discourse words ("please", "also", "btw, "…),
/// in lower case.
pub fn core(s: &str) -> String {
    let mut l = normalize(s.trim());
    loop {
        let before = l.len();
        for d in DISCOURSE {
            if let Some(rest) = l.strip_prefix(d)
                && (rest.is_empty() || rest.starts_with([' ', ',', ':', '!', '-']))
            {
                l = rest.trim_start_matches([' ', ',', ':', '!', '-']).to_owned();
            }
        }
        if l.len() == before {
            break;
        }
    }
    l
}

fn words(l: &str) -> Vec<&str> {
    l.split_whitespace().map(|w| w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')).collect()
}

/// What a sentence does (see the module docs).
pub fn role(sentence: &str) -> Role {
    let s = sentence.trim();
    if let Some(r) = super::lingua::role(s) {
        return r;
    }
    let plain = normalize(s);
    if let Some(flag) = FLAGS.iter().find(|f| plain.starts_with(**f)) {
        let rest = s.get(flag.len()..).unwrap_or("").trim_start_matches([' ', ',', ':', '-', '!']);
        // "A couple of things about this repo first:" introduces the rules
        // that follow; it states none itself.
        if rest.trim_end().ends_with(':') {
            return Role::Other;
        }
        if word_count(rest) >= 3 {
            return match role_of(rest) {
                r @ (Role::Request | Role::Question) => r,
                _ => Role::Rule,
            };
        }
    }
    role_of(s)
}

/// Whether `sentence` is a flagged statement of fact ("Careful, my laptop is
/// an arm mac"): a rule only because of its flag, so a rule right after it
/// is what it warns about.
pub fn is_flagged_fact(sentence: &str) -> bool {
    let s = sentence.trim();
    let plain = normalize(s);
    FLAGS.iter().find(|f| plain.starts_with(**f)).is_some_and(|flag| {
        let rest = s.get(flag.len()..).unwrap_or("").trim_start_matches([' ', ',', ':', '-', '!']);
        matches!(role_of(rest), Role::Other | Role::Reason)
    })
}

fn role_of(s: &str) -> Role {
    if s.ends_with('?') {
        // "Can you not use any here?": a prohibition asked as a question.
        return if prohibition_question(s).is_some() { Role::Rule } else { Role::Question };
    }
    let l = core(s);
    if asks_unmarked(&l) {
        return Role::Question;
    }
    // "Now make sure nothing broke, run the tests": "now" asks for the task at
    // hand, unless a word of habit makes it a rule ("now always use pnpm").
    let plain = normalize(s);
    if (plain.starts_with("now ") || plain.starts_with("now,")) && !strong_habit(&l) {
        return Role::Request;
    }
    let w = words(&l);
    if w.len() < 3 {
        return Role::Other;
    }
    if is_one_off(&l) {
        return Role::Request;
    }
    let first = w[0];
    // "This repo uses vitest": how the project works ("this" places it, it
    // refers to nothing said before).
    if matches!(first, "this" | "the")
        && w.get(1).is_some_and(|n| PLACES.contains(n))
        && w.get(2).is_some_and(|v| PROJECT_VERBS.contains(v))
    {
        return Role::Rule;
    }
    if matches!(first, "because" | "since" | "otherwise" | "as" | "it" | "this" | "that" | "they" | "these" | "those")
        || l.starts_with("that's why")
        || l.starts_with("the reason")
        || l.starts_with("that is why")
    {
        // "It breaks the lockfile" explains; "It must …" states a rule about
        // it, and so does "the reason … is …, so always run make seed first".
        return if w.iter().take(4).any(|x| MODALS.contains(x) || matches!(*x, "always" | "never"))
            || l.split([',', ';']).skip(1).any(rule_clause)
        {
            Role::Rule
        } else {
            Role::Reason
        };
    }
    if matches!(first, "thanks" | "thank" | "great" | "perfect" | "nice" | "cool" | "good" | "lgtm" | "sure" | "yes") {
        return Role::Other;
    }
    // "We're a yarn shop, not npm", "it's `make test`, not `go test`": a
    // contrast stated as what the project is or does.
    if matches!(first, "we're" | "it's" | "its") && names_the_alternative(&l) {
        return Role::Rule;
    }
    // "Keep PRs under 400 lines", "keep functions small": a kind of thing kept so.
    if first == "keep"
        && w.len() >= 3
        && w.get(1)
            .is_some_and(|x| x.len() >= 3 && x.ends_with('s') && !matches!(*x, "this" | "those" | "these" | "its"))
    {
        return Role::Rule;
    }
    // "The linter config is strict on purpose, don't disable rules inline":
    // a clause that states a rule makes the sentence one.
    if l.split([',', ';']).skip(1).any(rule_clause) {
        return Role::Rule;
    }
    // "Never mind, I found it."
    if l.starts_with("never mind") || l.starts_with("nevermind") {
        return Role::Other;
    }
    // "Make sure the new endpoint is covered by tests": about what is being
    // built now, unless a word of habit says otherwise.
    if format!(" {l}").contains(" the new ")
        && !strong_habit(&l)
        && !l.starts_with("never ")
        && !l.starts_with("always ")
    {
        return Role::Request;
    }
    // "Always nice when it's that simple": a judgement, not a habit.
    if matches!(first, "always" | "never") && w.get(1).is_some_and(|x| EVALUATIVE.contains(x)) {
        return Role::Other;
    }
    // "We never dealt with such patterns": what happened, not how to work.
    if matches!(first, "we" | "i" | "you")
        && w.get(1).is_some_and(|x| matches!(*x, "never" | "always"))
        && w.get(2).is_some_and(|x| is_past(x))
    {
        return Role::Other;
    }
    // "No more than one entry per day" limits a quantity; "no more X" stops a habit.
    if l.starts_with("no more ") && w.get(2).is_some_and(|x| matches!(*x, "than" | "then")) {
        return Role::Other;
    }
    if RULE_OPENERS.iter().any(|p| l.starts_with(p)) {
        return Role::Rule;
    }
    // "The user should be able to clone the same repo twice": what the thing
    // being built can do.
    if l.contains(" be able to ") && !l.starts_with("you ") {
        return Role::Request;
    }
    if let Some(r) = preference(&l) {
        return r;
    }
    // "If you need a reinstall, use npm ci --prefer-offline": a conditional
    // instruction is a standing rule.
    if conditional_rule(&w) {
        return Role::Rule;
    }
    if first == "we" && w.get(1).is_some_and(|v| WE_VERBS.contains(v)) {
        return Role::Rule;
    }
    if first == "our" && (l.contains(" is ") || l.contains(" are ") || l.contains(" convention")) {
        return Role::Rule;
    }
    if matches!(first, "use" | "run" | "put" | "keep" | "name" | "call" | "style" | "write" | "place") {
        return if contrast(&l) || habit(&l) || strong_habit(&l) { Role::Rule } else { Role::Request };
    }
    // "Apply the changes yourself, always": a habit said last.
    if [", always", " from now on", " going forward"].iter().any(|p| l.trim_end_matches(['.', '!']).ends_with(p)) {
        return Role::Rule;
    }
    if TASK_VERBS.contains(&first) {
        // "Add the index concurrently, never with a plain CREATE INDEX": an
        // alternative named in its own clause makes the request a rule.
        // ("Read the webhook from the environment instead of the config file"
        // describes the change asked for.)
        // Only the request's own clauses count, not an aside in parentheses.
        let own = without_asides(&l);
        let alternative = [", not ", ", never ", " - never ", " — never "].iter().any(|p| own.contains(p));
        return if alternative && !describes(&w) { Role::Rule } else { Role::Request };
    }
    // A statement about the project with a modal: "Tests must run serially";
    // a weak one ("should", "needs to") only with a word of habit.
    let subject_ok = |p: usize| p > 0 && !w[..p].iter().any(|x| DESCRIBING.contains(x) && *x != "it");
    if let Some(p) = w.iter().take(6).position(|x| MODALS.contains(x))
        && subject_ok(p)
    {
        return Role::Rule;
    }
    if let Some(p) = w.iter().take(6).position(|x| WEAK_MODALS.contains(x))
        && subject_ok(p)
        && (strong_habit(&l) || matches!(w[0], "you" | "all" | "every" | "each" | "any"))
        && (!matches!(w[p], "need" | "needs" | "has" | "have") || w.get(p + 1) == Some(&"to"))
    {
        return Role::Rule;
    }
    // "Handlers go in internal/http, not main.go": where things belong.
    if [" go in ", " goes in ", " live in ", " lives in ", " belong in ", " belongs in ", " go into ", " go under "]
        .iter()
        .any(|p| l.contains(p))
    {
        return Role::Rule;
    }
    if strong_habit(&l) && !describes(&w) {
        return Role::Rule;
    }
    if quirk(&l) {
        return Role::Rule;
    }
    Role::Other
}

/// The text without what stands in parentheses.
fn without_asides(l: &str) -> String {
    let mut depth = 0usize;
    l.chars()
        .filter(|c| {
            match c {
                '(' => depth += 1,
                ')' => {
                    depth = depth.saturating_sub(1);
                    return false;
                }
                _ => {}
            }
            depth == 0
        })
        .collect()
}

/// Whether a sentence asks to make sure of something ("make sure to
/// mention the status", "ensure it still prints"), with no word of habit.
pub fn asks_to_ensure(s: &str) -> bool {
    let l = core(s);
    ["make sure ", "ensure ", "be sure "].iter().any(|p| l.starts_with(p)) && !strong_habit(&l)
}

/// Whether a sentence asks something without a question mark ("so if I
/// close you how am I supposed to pick up where we left off").
fn asks_unmarked(l: &str) -> bool {
    let w = words(l);
    matches!(w.first(), Some(&("how" | "why" | "what" | "what's" | "whats" | "where" | "which" | "who")))
        || ["how am i ", "how do i ", "how can i ", "how should i ", "how do we ", "how can we ", "is there a way"]
            .iter()
            .any(|p| l.contains(p))
}

/// Whether a word is a verb in the past tense ("dealt", "used", "had").
fn is_past(w: &str) -> bool {
    (w.len() >= 4 && w.ends_with("ed") && !w.ends_with("need") && !w.ends_with("eed"))
        || matches!(
            w,
            "did"
                | "had"
                | "was"
                | "were"
                | "dealt"
                | "made"
                | "wrote"
                | "got"
                | "went"
                | "saw"
                | "said"
                | "told"
                | "thought"
                | "knew"
                | "ran"
                | "built"
                | "found"
                | "felt"
                | "meant"
                | "took"
                | "gave"
                | "came"
        )
}

/// Whether a correction only reports how the result still is ("I looked
/// again and this isn't right, it still lists the old entries"), asking
/// nothing: a status of the task at hand.
pub fn reports_state(s: &str) -> bool {
    let l = core(s);
    let padded = format!(" {l} ");
    let state = [
        " still ",
        " isn't right",
        " isnt right",
        " is not right",
        " is wrong",
        " doesn't work",
        " doesnt work",
        " does not work",
        " not working",
        " didn't work",
        " did not work",
        " is broken",
    ]
    .iter()
    .any(|p| padded.contains(p));
    let asks = l.split([',', ';']).any(|c| {
        let w = words(c.trim());
        w.first().is_some_and(|x| {
            TASK_VERBS.contains(x) && !matches!(*x, "can" | "could" | "would" | "will" | "get" | "look" | "go")
                || matches!(*x, "use" | "run" | "don't" | "dont" | "never" | "always" | "please" | "stop" | "keep")
        })
    });
    state && !asks
}

/// Whether ", not X" names a thing (a tool, a command: "a yarn shop, not
/// npm"), rather than qualifying ("it's fine, not a big deal").
fn names_the_alternative(l: &str) -> bool {
    [", not ", " - not ", " — not "].iter().any(|p| {
        l.split_once(p).is_some_and(|(_, tail)| {
            let clause = tail.split([',', ';']).next().unwrap_or("");
            let w = words(clause);
            (1..=3).contains(&w.len())
                && !matches!(
                    w[0],
                    "a" | "an"
                        | "the"
                        | "that"
                        | "this"
                        | "so"
                        | "really"
                        | "very"
                        | "much"
                        | "sure"
                        | "yet"
                        | "quite"
                        | "too"
                        | "bad"
                        | "great"
                        | "worth"
                        | "exactly"
                        | "just"
                        | "even"
                        | "always"
                        | "only"
                        | "now"
                        | "here"
                )
        })
    })
}

/// Whether a clause after a comma states a rule by itself ("don't hand write
/// them", "never hardcode it"), not a state of mind ("don't know why").
fn rule_clause(clause: &str) -> bool {
    let mut c = clause.trim();
    // "…, so always run make seed first".
    for link in ["so ", "then ", "and ", "but "] {
        c = c.strip_prefix(link).unwrap_or(c);
    }
    let w = words(c);
    let opens = ["don't ", "dont ", "do not ", "never ", "always ", "avoid "].iter().any(|p| c.starts_with(p));
    let mind = w.get(1).is_some_and(|x| {
        matches!(
            *x,
            "know"
                | "think"
                | "see"
                | "understand"
                | "care"
                | "remember"
                | "mind"
                | "get"
                | "worry"
                | "bother"
                | "has"
                | "had"
                | "was"
                | "is"
                | "been"
                | "were"
                | "works"
                | "worked"
                | "happens"
        )
    });
    opens && !mind && w.len() >= 3
}

/// "Can you not use any here?" as "Don't use any here.", when `s` asks so.
pub fn prohibition_question(s: &str) -> Option<String> {
    let t = s.trim().trim_end_matches('?').trim_end();
    let lower = normalize(t);
    ["can you not ", "could you not ", "can we not ", "could we not ", "would you not "].iter().find_map(|p| {
        let rest = lower.strip_prefix(p)?;
        (word_count(rest) >= 2).then(|| format!("Don't {}.", &t[t.len() - rest.len()..]))
    })
}

/// Nouns that name the project after "this" ("in this repo").
const PLACES: &[&str] = &["repo", "repository", "project", "codebase", "team", "service", "app", "monorepo"];

/// Verbs that make "this repo …" a statement of how the project works.
const PROJECT_VERBS: &[&str] = &[
    "uses", "use", "runs", "needs", "requires", "builds", "deploys", "targets", "ships", "pins", "relies", "only",
    "never", "always", "must", "doesn't", "does", "can't", "cannot", "won't",
];

/// How the user opens a statement of what they like (the object follows).
const PREFERENCE_OPENERS: &[(&str, bool)] = &[
    // (opener, whether "to …" after it is a standing preference too)
    ("i prefer ", true),
    ("i'd prefer ", true),
    ("i would prefer ", true),
    ("i'd rather ", true),
    ("i would rather ", true),
    ("i don't want ", false),
    ("i dont want ", false),
    ("i do not want ", false),
    ("i don't like ", false),
    ("i dont like ", false),
    ("i do not like ", false),
    ("i hate ", false),
    ("i like ", false),
    ("i want ", false),
];

/// "I don't want comments that restate the code", "I prefer short answers":
/// what the user likes about a kind of thing is a standing preference;
/// about a particular one ("I don't want the modal to close", "I want a date
/// filter") it is the task at hand. `None` when `l` states no preference.
fn preference(l: &str) -> Option<Role> {
    let (opener, to_ok) = PREFERENCE_OPENERS.iter().find(|(p, _)| l.starts_with(p))?;
    let w = words(&l[opener.len()..]);
    let first = *w.first()?;
    let particular = matches!(
        first,
        "the" | "this" | "that" | "these" | "those" | "it" | "its" | "a" | "an" | "one" | "them" | "him" | "her"
    ) || (first == "to" && !to_ok);
    Some(if particular { if strong_habit(l) { Role::Rule } else { Role::Request } } else { Role::Rule })
}

/// Whether "everywhere"/"anywhere" asks for a standing habit ("use date-fns
/// everywhere"), not reports what was done ("I changed the parsing
/// everywhere").
fn instructs_everywhere(l: &str) -> bool {
    ["everywhere", "anywhere"].iter().any(|w| {
        l.split([',', ';']).any(|clause| {
            let c = words(clause.trim());
            c.contains(w)
                && !(matches!(c.first(), Some(&("i" | "we" | "you" | "i've" | "we've")))
                    && c.iter().take(4).any(|x| x.len() > 3 && x.ends_with("ed")))
        })
    })
}

/// Words that make any statement a standing rule.
fn strong_habit(l: &str) -> bool {
    strong_habit_words(l) || instructs_everywhere(l)
}

fn strong_habit_words(l: &str) -> bool {
    [
        " always",
        " never",
        " every time",
        " each time",
        " whenever",
        " from now on",
        " going forward",
        " in this repo",
        " in this project",
        " in this codebase",
        " in our ",
        " on this machine",
        // A rule carried over from elsewhere: "same as in the docs portal:".
        " same as in",
        " same as the",
        " same rule",
        " like in the",
        " like in our",
        // "Wrap with fmt.Errorf and %w like the rest of the code."
        " like the rest",
        " as the rest",
        " like everywhere",
        " like elsewhere",
        " like we always",
        " as we always",
        " as a rule",
        " throughout the development",
        " throughout development",
        " throughout the project",
    ]
    .iter()
    .any(|p| format!(" {l}").contains(p))
}

/// Words that open the main clause of a conditional instruction.
const CONDITIONAL_VERBS: &[&str] =
    &["use", "run", "prefer", "never", "always", "don't", "dont", "pass", "call", "follow", "stick"];

/// "If you (ever) need/want/have to X, use Y" and "whenever X, run Y": a
/// condition about the one addressed, then an instruction.
fn conditional_rule(w: &[&str]) -> bool {
    let about_you = match w {
        ["if", "you" | "we", rest @ ..] => {
            let rest = rest.strip_prefix(&["ever"]).unwrap_or(rest);
            matches!(rest.first(), Some(&("need" | "want" | "have" | "must" | "ever" | "touch" | "change" | "add")))
        }
        ["whenever", ..] => true,
        // "When writing AL code, follow …", "when deploying, run …": a kind of
        // work, then how it is done.
        ["when", v, ..] if v.len() > 4 && v.ends_with("ing") => true,
        // "When you add an env var, also add it to .env.example": a kind of
        // change, then what goes with it ("when you're done" is this task's).
        ["when", "you" | "we", v, ..] => WHEN_CHANGES.contains(v),
        _ => false,
    };
    about_you && w.iter().skip(3).any(|x| CONDITIONAL_VERBS.contains(x) || *x == "also")
}

/// Changes that open a standing "when you …, also …" instruction.
const WHEN_CHANGES: &[&str] = &[
    "add",
    "change",
    "touch",
    "create",
    "bump",
    "rename",
    "remove",
    "write",
    "edit",
    "modify",
    "introduce",
    "release",
    "deploy",
    "publish",
    "merge",
    "update",
    "upgrade",
    "delete",
];

/// "instead of", "not X", "rather than", "over": a choice between two ways.
fn contrast(l: &str) -> bool {
    [" instead", " not ", ", not", " rather than", " over ", " never ", " only ", "n't ", " no "]
        .iter()
        .any(|p| l.contains(p))
        || l.ends_with(" not")
}

/// Words that make an instruction a standing habit.
fn habit(l: &str) -> bool {
    [
        " always",
        " never",
        " before ",
        " after every",
        " every time",
        " each time",
        " whenever",
        " first",
        " from now on",
        " going forward",
        " in this repo",
        " in this project",
        " here",
        " for all ",
        " for every ",
        " must ",
    ]
    .iter()
    .any(|p| format!(" {l}").contains(p))
        || instructs_everywhere(l)
}

/// Whether the first "always"/"never" follows a word that makes it describe
/// the thing asked for ("… that always returns 200").
fn describes(w: &[&str]) -> bool {
    match w.iter().position(|x| matches!(*x, "always" | "never")) {
        Some(p) if p > 0 => {
            DESCRIBING.contains(&w[p - 1])
                || COPULAS.contains(&w[p - 1])
                // "I always forget the flags for tar": a confession.
                || (w[p - 1] == "i" && w.get(p + 1).is_some_and(|x| LAPSES.contains(x)))
                || w[..p].iter().rev().take(3).any(|x| DESCRIBING.contains(x))
        }
        _ => false,
    }
}

/// Words that carry no subject matter ("that's not how we do it").
const FUNCTION_WORDS: &[&str] = &[
    "how", "we", "do", "it", "this", "that", "that's", "thats", "what", "i", "you", "the", "a", "an", "is", "not",
    "like", "way", "one", "here", "there", "want", "wanted", "meant", "mean", "did", "does", "doing", "done", "again",
    "wrong", "right", "so", "just", "to", "of", "all", "at", "no", "yes", "ok", "please", "thing", "things", "about",
    "said", "told", "think", "thought", "asked", "ask", "was", "were", "be", "my", "me", "your", "our", "us", "in",
];

/// Whether a sentence asks for this once ("for now", "this time").
pub fn is_one_off(s: &str) -> bool {
    let l = core(s);
    // Whole words: "in this pr" is not "in this project".
    let padded = format!(" {} ", words(&l).join(" "));
    ONE_OFF.iter().any(|p| padded.contains(&format!(" {p} ")))
}

/// Whether a sentence names nothing: only function words ("That's not how
/// we do it", "Not what I meant").
pub fn says_nothing(s: &str) -> bool {
    if let Some(empty) = super::lingua::says_nothing(s) {
        return empty;
    }
    let l = core(s);
    words(&l).iter().all(|w| w.len() < 2 || FUNCTION_WORDS.contains(w))
}

/// Whether a correction points at a particular thing of the task at hand
/// ("not that file, the other one"): it redirects this task, it teaches
/// nothing.
pub fn points_at_particular(s: &str) -> bool {
    let l = core(s);
    let padded = format!(" {l} ");
    [" the other one", " that one", " this one", " the one above", " the one below", " the first one", " the last one"]
        .iter()
        .any(|p| padded.contains(p))
        || ((l.starts_with("not that ") || l.starts_with("not this ")) && word_count(&l) <= 6)
}

/// Environment quirks a user states: "X only works with Y", "X requires Y".
fn quirk(l: &str) -> bool {
    [
        " only works",
        " doesn't work",
        " does not work",
        " won't work",
        " is broken",
        " requires ",
        " is required",
        " needs to be",
        " has to be",
        " must be",
        " is not allowed",
        " isn't allowed",
        " is read-only",
        " is read only",
        " runs on port",
        " listens on",
    ]
    .iter()
    .any(|p| l.contains(p))
}

/// Whether a user message following the agent's work corrects it, judging
/// by its first sentence (openers) or anywhere ("I said", "instead of").
pub fn is_correction(first_sentence: &str, whole: &str) -> bool {
    if let Some(c) = super::lingua::is_correction(first_sentence, whole) {
        return c;
    }
    let l = core(first_sentence);
    let opens = CORRECTION_OPENERS.iter().any(|p| {
        l.strip_prefix(p).is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', ',', '.', '!', ':', '-', '—']))
    });
    let w = normalize(whole);
    // "Make the pr command take a path instead of a session name" describes
    // the change asked for.
    let asks_change = words(&l).first().is_some_and(|v| TASK_VERBS.contains(v));
    opens
        || CORRECTION_ANYWHERE
            .iter()
            .any(|p| w.contains(p) && !(asks_change && matches!(*p, "instead of" | "rather than") && l.contains(p)))
}

/// The sentence without its correction opener ("No, " "Actually, " "Wrong: ").
pub fn strip_correction_opener(s: &str) -> &str {
    if let Some(rest) = super::lingua::strip_correction_opener(s) {
        return rest;
    }
    let lower = normalize(s);
    for p in [
        "no no",
        "nope",
        "nah",
        "no",
        "wrong",
        "actually",
        "wait",
        "hold on",
        "stop",
        "not like that",
        "not that",
        "that's wrong",
        "that is wrong",
    ] {
        if let Some(rest) = lower.strip_prefix(p)
            && rest.starts_with([',', '.', '!', ':', '-', '—', ' '])
            // "Stop using print" keeps its verb; "Stop. Use …" is an outburst.
            && !(p == "stop" && rest.starts_with(' '))
            && !(p == "no" && rest.starts_with(' ') && !interjected(rest))
        {
            let cut = s.len() - rest.len();
            if s.is_char_boundary(cut) {
                return s[cut..].trim_start_matches([',', '.', '!', ':', '-', '—', ' ']);
            }
        }
    }
    s
}

/// Words that follow an interjected "no" ("no use pnpm", "no we don't"); any
/// other word makes "no" a determiner that carries the rule ("no black here",
/// "no emojis in commits"), which is kept.
fn interjected(rest: &str) -> bool {
    let next = rest.split_whitespace().next().unwrap_or("").trim_end_matches([',', '.', '!', ':']);
    matches!(
        next,
        "use"
            | "run"
            | "we"
            | "you"
            | "i"
            | "it"
            | "it's"
            | "its"
            | "that"
            | "that's"
            | "thats"
            | "this"
            | "the"
            | "please"
            | "just"
            | "don't"
            | "dont"
            | "do"
            | "not"
            | "never"
            | "always"
            | "stop"
            | "wait"
            | "actually"
            | "instead"
            | "go"
            | "put"
            | "call"
            | "keep"
            | "make"
            | "add"
            | "remove"
            | "revert"
            | "undo"
            | "there"
            | "here"
            | "wrong"
            | "sorry"
            | "no"
            | "nope"
            | "leave"
            | "let's"
            | "lets"
            | "write"
            | "pass"
            | "start"
    )
}

/// Openers that add nothing to a statement kept as a memory.
const FILLER: &[&str] = &[
    "and",
    "also",
    "but",
    "so",
    "plus",
    "oh",
    "ok",
    "okay",
    "right",
    "well",
    "again",
    "btw",
    "by the way",
    "fyi",
    "please",
    "pls",
    "plz",
    "just",
    "now",
    "as i said",
    "like i said",
    "i said",
    "i told you",
    "remember that",
    "remember",
    "reminder",
    "note that",
    "notice that",
    "keep in mind that",
    "keep in mind",
    "be aware that",
    "note",
    "important",
    "heads-up",
    "heads up",
    "two things",
    "two rules",
    "three things",
    "three rules",
    "a few things",
    "some rules",
    "ground rules",
    "for the future",
    "in the future",
    "for future reference",
    "for next time",
];

/// The statement without openers that add nothing ("And", "Again:", "I
/// told you,", "Two rules here:"), in its own case.
pub fn without_filler(s: &str) -> &str {
    let mut rest = s.trim();
    // "Same as in the docs portal: components with hooks need …".
    let lower = normalize(rest);
    if (lower.starts_with("same as") || lower.starts_with("like in"))
        && let Some(colon) = rest.find(':')
        && word_count(&rest[..colon]) <= 8
        && word_count(&rest[colon + 1..]) >= 3
    {
        rest = rest[colon + 1..].trim_start();
    }
    loop {
        let lower = normalize(rest);
        let before = rest.len();
        for f in FILLER {
            let Some(after) = lower.strip_prefix(f) else { continue };
            // "Remember to update the changelog" keeps its verb.
            if *f == "remember" && after.starts_with(" to ") {
                continue;
            }
            let after = after.strip_prefix(" here").unwrap_or(after);
            if after.is_empty() || !after.starts_with([' ', ',', ':', '!', '-', '—']) {
                continue;
            }
            let cut = rest.len() - after.len();
            if let Some(r) = rest.get(cut..) {
                let r = r.trim_start_matches([' ', ',', ':', '!', '-', '—']);
                if word_count(r) >= 3 {
                    rest = r;
                }
            }
            break;
        }
        if rest.len() == before {
            return rest;
        }
    }
}

/// `s` without a short request about the thing at hand tacked on after a
/// comma: "I don't want comments that restate the code, drop that one" keeps
/// the preference, not "drop that one".
pub fn without_trailing_request(s: &str) -> &str {
    let Some(comma) = s.rfind(", ") else { return s };
    let (head, tail) = (&s[..comma], &s[comma + 2..]);
    let l = normalize(tail);
    let w = words(&l);
    let asks = w.first().is_some_and(|v| TASK_VERBS.contains(v) || matches!(*v, "drop" | "undo" | "revert" | "redo"));
    // The verb's object is the thing at hand: "drop that one", "remove it".
    let about_it = w.get(1).is_some_and(|x| matches!(*x, "it" | "that" | "this" | "them" | "those"));
    if asks && about_it && (2..=3).contains(&w.len()) && word_count(head) >= 4 { head } else { s }
}

/// Whether the sentence opens with a negation ("Don't…", "Never…", "Not…").
pub fn is_negative(s: &str) -> bool {
    let l = core(s);
    let l = l.strip_prefix("we ").or_else(|| l.strip_prefix("you ")).unwrap_or(&l);
    ["don't", "dont", "do not", "never", "not ", "no ", "stop ", "avoid ", "can't", "cannot", "shouldn't", "mustn't"]
        .iter()
        .any(|p| l.starts_with(p))
}

/// Whether a rule is the user's own way of working, for every project: it
/// speaks of "I"/"me"/"my" and names no project, path or command ("Don't end
/// with a summary of what you changed, I read the diff").
pub fn is_personal(s: &str) -> bool {
    if let Some(p) = super::lingua::is_personal(s) {
        return p;
    }
    let l = normalize(s);
    let w = words(&l);
    let personal = w.iter().any(|x| matches!(*x, "i" | "me" | "my" | "i'm" | "i've" | "i'll" | "myself"));
    let local = ["here", "this repo", "this project", "this codebase", "this service", "this app", "in our"]
        .iter()
        .any(|p| format!(" {l} ").contains(&format!(" {p}")))
        || w.iter().any(|x| matches!(*x, "here" | "repo" | "project" | "codebase"));
    // "in my rust projects", "in my go services": a rule of a kind of project.
    let scoped = w.iter().any(|x| {
        matches!(*x, "projects" | "repos" | "repositories" | "services" | "apps" | "crates" | "packages" | "modules")
    });
    personal && !local && !scoped && !names_code(s)
}

/// Whether a sentence names code, a path or a setting (a backtick span,
/// `a/b`, `snake_case`, `KEY=value`, `mod::item`): then it is some
/// project's, not the person's everywhere.
fn names_code(s: &str) -> bool {
    s.contains('`') || s.split_whitespace().any(|x| x.contains(['/', '_', '=']) || x.contains("::"))
}

/// Whether a rule is about the user's git workflow (commit messages, pull
/// requests, branch names) and anchored to no project ("commit messages are
/// one short line in the imperative mood"): a habit of the person, kept in
/// every project, whatever its stack. "In this repo", "we", "our" or a path
/// make it the project's.
pub fn is_workflow_habit(s: &str) -> bool {
    let l = normalize(s);
    let padded = format!(" {} ", words(&l).join(" "));
    let topic = [
        " commit message",
        " commit messages ",
        " commit subject",
        " commit title",
        " pull request",
        " pr title",
        " pr description",
        " pr descriptions ",
        " branch name",
        " branch names ",
    ]
    .iter()
    .any(|t| padded.contains(t));
    let anchored =
        [" here ", " repo ", " repository ", " project ", " codebase ", " we ", " our ", " us ", " team ", " this "]
            .iter()
            .any(|a| padded.contains(a));
    topic && !anchored && !names_code(s)
}

/// Whether a sentence opens a list of rules ("Two things about this repo:"):
/// what follows it in the message states them.
pub fn is_rules_intro(s: &str) -> bool {
    let plain = normalize(s.trim());
    let Some(flag) = FLAGS.iter().find(|f| plain.starts_with(**f)) else { return false };
    // "A few things:" may list tasks; "two things about this repo:" lists rules.
    let count = matches!(*flag, "two things" | "three things" | "a few things" | "a couple of things");
    s.trim_end().ends_with(':')
        && (!count || [" about ", " to know", " to remember", "rules", "conventions"].iter().any(|w| plain.contains(w)))
}

/// Whether a request says how to do a kind of work ("run them with cargo
/// test --features it"), which a statement before it makes a standing rule.
pub fn is_method_request(s: &str) -> bool {
    let l = core(s);
    let w = words(&l);
    w.first().is_some_and(|v| matches!(*v, "run" | "use" | "start" | "build" | "call" | "launch" | "test"))
        && [" with ", " using ", " via ", " through "].iter().any(|p| l.contains(p))
}

/// Whether the sentence names the alternative ("we use X", "use X", "X instead").
pub fn is_alternative(s: &str) -> bool {
    let l = core(s);
    let w = words(&l);
    // "Don't hand-write migrations. We always generate them with alembic."
    let we_do = w.first() == Some(&"we")
        && w.get(1)
            .is_some_and(|v| WE_VERBS.contains(v) && !matches!(*v, "never" | "don't" | "dont" | "can't" | "cannot"))
        // "them" names what the rule before forbids; "We always keep a
        // deprecated alias" is a rule of its own.
        && leans_on_context(s);
    l.starts_with("we use")
        || we_do
        || l.starts_with("use ")
        || l.starts_with("run ")
        || l.contains("instead")
        || conditional_rule(&w)
}

/// Whether the sentence asks to undo what was just done ("revert that and
/// …", "undo it", "roll it back", "put that back").
pub fn asks_to_undo(s: &str) -> bool {
    let l = core(s);
    let w = words(&l);
    matches!(
        w.as_slice(),
        ["revert" | "undo" | "rollback", ..]
            | ["roll" | "put", "back", ..]
            | ["roll" | "put", "it" | "that" | "this" | "them" | "those", "back", ..]
    )
}

/// Whether the sentence refers back without naming what it is about.
pub fn leans_on_context(s: &str) -> bool {
    let l = core(s);
    let w = words(&l);
    // "Same rule in all my rust projects."
    (w.first() == Some(&"same") && w.get(1).is_some_and(|x| matches!(*x, "rule" | "for" | "here" | "goes")))
        || w.iter().take(4).enumerate().any(|(i, x)| {
            // "this" in "in this repo" places the rule; it refers to nothing said before.
            let places = matches!(*x, "this" | "that") && w.get(i + 1).is_some_and(|n| PLACES.contains(n));
            matches!(*x, "it" | "that" | "this" | "them" | "those" | "there") && !places
        }) && !s.contains('`')
            && !w.iter().any(|x| x.contains(['.', '_', '/']) || x.contains("::"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sentence_boundaries() {
        assert_eq!(
            sentences("No, use pnpm. We never use npm here!\n```\nnpm i\n```\nok?"),
            vec!["No, use pnpm.", "We never use npm here!", "ok?"]
        );
        assert_eq!(sentences("Use e.g. `pnpm i` here. Done."), vec!["Use e.g. `pnpm i` here.", "Done."]);
        assert_eq!(sentences("- always run lint\n- never push to main"), vec!["always run lint", "never push to main"]);
        assert_eq!(
            sentences("Always run pnpm lint before committing; tests go in the tests/unit folder."),
            vec!["Always run pnpm lint before committing.", "tests go in the tests/unit folder."]
        );
        assert_eq!(
            sentences("Use pnpm, not npm; it breaks the lockfile otherwise."),
            vec!["Use pnpm, not npm; it breaks the lockfile otherwise."]
        );
        assert_eq!(sentences("Run `make gen. then` twice."), vec!["Run `make gen. then` twice."]);
        assert_eq!(
            sentences("Never call unwrap(), propagate errors with ? instead. Ok ? Oui ! Merci."),
            vec!["Never call unwrap(), propagate errors with ? instead.", "Ok ?", "Oui !", "Merci."]
        );
        assert_eq!(sentences("以后都用 pnpm。不要用 npm！好吗？"), vec!["以后都用 pnpm。", "不要用 npm！", "好吗？"]);
    }

    #[test]
    fn rules_requests_and_the_rest() {
        for rule in [
            "Always run pnpm lint before committing.",
            "Never edit the generated files in src/gen.",
            "We use pnpm in this repo.",
            "Please don't touch the migrations folder.",
            "Use uv, not pip.",
            "Use pnpm instead of npm.",
            "Tests must run serially because they share one database.",
            "And yes, apply the changes yourself, always.",
            "Create a rule that specifies that when fixing a bug you first write a failing test.",
            "When writing AL code, follow the best practices of the AL guidelines.",
            "The readme should be updated throughout the development of the project.",
            "Also, make sure the server is running before the e2e tests.",
            "Run docker compose up -d redis before the tests.",
            "The staging database is read-only.",
            "In this repo the API listens on 8080.",
        ] {
            assert_eq!(role(rule), Role::Rule, "{rule}");
        }
        for request in [
            "Add a /health endpoint that always returns 200.",
            "Please fix the flaky login test.",
            "Create a script that never exits on error.",
            "Use the new client in the handler.",
            "Run the tests.",
            "Can you make the build faster.",
        ] {
            assert_eq!(role(request), Role::Request, "{request}");
        }
        assert_eq!(role("Why is the build slow?"), Role::Question);
        assert_eq!(role("It breaks the lockfile."), Role::Reason);
        assert_eq!(role("Thanks, that works."), Role::Other);
        assert_eq!(role("now make sure nothing broke, run the tests"), Role::Request);
        assert_eq!(role("a couple of things about this repo first:"), Role::Other);
        assert_eq!(role("wrap with fmt.Errorf and %w like the rest of the code"), Role::Rule);
        assert_eq!(role("Make sure to run pnpm lint before committing."), Role::Rule);
        assert_eq!(
            role("Make sure the queue workers are drained with bin/drain_birch until BIRCH_QUEUE_EMPTY shows up."),
            Role::Rule
        );
        assert_eq!(role("if you need a reinstall use npm ci --prefer-offline"), Role::Rule);
        assert_eq!(role("I don't want comments that just restate what the code does, drop that one"), Role::Rule);
        assert_eq!(role("I prefer small focused commits"), Role::Rule);
        assert_eq!(role("run the whole test suite, I changed the date parsing everywhere"), Role::Request);
        assert_eq!(role("don't use moment anywhere, we use date-fns"), Role::Rule);
        assert!(is_rules_intro("Two things about this repo:"));
        assert!(is_method_request("run them with cargo test --features it"));
        assert!(is_workflow_habit(
            "Commit messages are one short line in the imperative mood (\"add --json flag\"), no emojis."
        ));
        assert!(!is_workflow_habit("Commit messages in this repo follow conventional commits."));
        assert!(!is_workflow_habit("We squash pull requests on merge."));
        assert_eq!(role("this repo uses vitest, run the tests with pnpm vitest run"), Role::Rule);
        assert_eq!(role("this is the old parser"), Role::Reason);
        assert_eq!(
            without_filler("remember that every error response must be problem+json"),
            "every error response must be problem+json"
        );
        assert_eq!(
            without_trailing_request("I don't want comments that just restate what the code does, drop that one"),
            "I don't want comments that just restate what the code does"
        );
        assert_eq!(without_trailing_request("Use pnpm, not npm"), "Use pnpm, not npm");
        assert_eq!(
            without_trailing_request("Run the linter first, fix what it says"),
            "Run the linter first, fix what it says"
        );
        assert!(!leans_on_context("in this repo we rebase on main, never merge main into the branch"));
        assert!(leans_on_context("always run it with TZ=UTC"));
        assert_eq!(role("I'd rather you ask before installing anything"), Role::Rule);
        assert_eq!(role("I want a date range filter on the orders table"), Role::Request);
        assert_eq!(role("I don't want the modal to close on outside click"), Role::Request);
        assert_eq!(role("I want to see the failing test first"), Role::Request);
        assert_eq!(role("If you ever have to bump a dependency, run cargo update -p on that crate only."), Role::Rule);
        assert_eq!(role("if the test fails, fix it"), Role::Other);
        assert_eq!(
            role("for the future: commit messages are one short line in the imperative mood, no emojis."),
            Role::Rule
        );
    }

    #[test]
    fn corrections() {
        assert!(is_correction("No, use pnpm.", "No, use pnpm."));
        assert!(is_correction("Actually, the port is 5173.", ""));
        assert!(is_correction("I said to use pnpm.", "I said to use pnpm."));
        assert!(!is_correction("Nothing else to do.", "Nothing else to do."));
        assert!(!is_correction("Notice the spacing.", "Notice the spacing."));
        assert_eq!(strip_correction_opener("No, don't use npm here."), "don't use npm here.");
        assert_eq!(strip_correction_opener("Nope. Use pnpm."), "Use pnpm.");
        assert_eq!(strip_correction_opener("Nothing to add."), "Nothing to add.");
        // "no" as a determiner carries the rule: never stripped.
        assert_eq!(
            strip_correction_opener("no black here either, it's ruff format like everywhere"),
            "no black here either, it's ruff format like everywhere"
        );
        assert_eq!(strip_correction_opener("no use pnpm."), "use pnpm.");
        assert_eq!(strip_correction_opener("no we don't use jest."), "we don't use jest.");
        assert!(leans_on_context("Run it with --runInBand."));
        assert!(is_personal("Don't end with a summary of what you changed, I read the diff."));
        assert!(!is_personal("I told you, we use pnpm here."));
        assert!(!is_personal("Run `cargo nextest run` in my projects."));
        assert!(!is_personal("Cargo nextest run in my rust projects, not cargo test."));
        assert!(is_negative("We don't use an ORM here."));
        assert!(is_alternative("we always generate them with alembic revision --autogenerate"));
        assert!(!is_alternative("We never squash merge."));
        assert!(!is_alternative("We always keep a deprecated alias."));
        assert_eq!(without_filler("And don't log it twice."), "don't log it twice.");
        assert_eq!(without_filler("Again: never latest in our Dockerfiles."), "never latest in our Dockerfiles.");
        assert_eq!(without_filler("I told you, cargo nextest run here."), "cargo nextest run here.");
        assert_eq!(without_filler("Two rules here: never raise the MSRV."), "never raise the MSRV.");
        assert_eq!(without_filler("Andrew owns the build."), "Andrew owns the build.");
        assert_eq!(
            without_filler("same as in the docs portal: components with hooks need \"use client\" as the first line."),
            "components with hooks need \"use client\" as the first line."
        );
        assert!(leans_on_context("same rule in all my rust projects."));
        assert!(asks_to_undo("Revert that and do just rustls."));
        assert!(asks_to_undo("roll it back, the old timeout was right"));
        assert!(!asks_to_undo("Reverting a migration needs the down file."));
        assert!(!asks_to_undo("Put the tests next to the code."));
        assert_eq!(without_markers("- * always lint"), "always lint");
        assert_eq!(without_markers("--reuse-db, like in the crm."), "--reuse-db, like in the crm.");
        assert!(!leans_on_context("Run `pnpm test` with --runInBand."));
    }

    #[test]
    fn reports_questions_and_specs_are_not_rules() {
        for (s, want) in [
            ("so if I restart the server how am I supposed to keep the cache", Role::Question),
            ("We never deploy on Fridays.", Role::Rule),
            ("We never used mocks for that.", Role::Other),
            ("No more than three retries per job.", Role::Other),
            ("No more print debugging in the handlers.", Role::Rule),
            ("The admin should be able to export every report as CSV.", Role::Request),
            (
                "Add an export command that writes a CSV (it should call the service layer, not the CLI) and prints the path.",
                Role::Request,
            ),
            ("Add the index concurrently, never with a plain CREATE INDEX.", Role::Rule),
        ] {
            assert_eq!(role(s), want, "{s}");
        }
        assert!(reports_state("I checked again and this isn't right, it still lists the archived items."));
        assert!(!reports_state("It still uses npm, use pnpm."));
        assert!(asks_to_ensure("Make sure to note the new flag in the changelog."));
        assert!(!asks_to_ensure("Make sure you always run the linter first."));
        assert!(!is_correction("Make the export command take a path instead of a name.", "x"));
        assert!(is_correction("Use pnpm instead of npm.", "Use pnpm instead of npm."));
    }
}
