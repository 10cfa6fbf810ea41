//! Rules stated in languages other than English: which language a sentence
//! is in, and the words that make it a standing rule, a correction or the
//! user's own preference there.
//!
//! English goes through [`super::prose`]'s finer grammar; every other
//! language gets the same three questions answered from word lists a native
//! speaker would recognise as the markers of a lasting rule ("from now on",
//! "always", "never", "in general"), of an obligation or a prohibition with a
//! subject ("the code must …", "不要 …"), and of a correction ("non", "不对").
//! A sentence without such a marker is not a rule: requests for the task at
//! hand are by far the most common thing users write, in every language.

use shared::domain::memory::quality;

use super::prose::Role;

/// The languages told apart. `En` is also the answer for any text the others
/// do not claim, so English rules keep their own path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Lang {
    En,
    Fr,
    Es,
    Pt,
    De,
    It,
    Cs,
    Ru,
    Zh,
    Ja,
    Ko,
}

const LATIN: [Lang; 6] = [Lang::Fr, Lang::Es, Lang::Pt, Lang::De, Lang::It, Lang::Cs];

/// Function words common in each language and rare as English words.
fn function_words(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::En => &[
            "the", "is", "are", "and", "of", "to", "it", "that", "this", "you", "we", "for", "with", "not", "don't",
            "use", "always", "never", "should", "must", "be", "when", "what", "please", "can", "from", "my", "our",
        ],
        Lang::Fr => &[
            "je", "tu", "il", "nous", "vous", "le", "les", "des", "une", "est", "pas", "que", "qui", "dans", "pour",
            "avec", "sur", "ce", "cette", "mais", "ne", "du", "au", "aux", "mon", "mes", "fais", "peux", "veux",
            "c'est", "j'ai", "n'est", "et", "ou", "en", "non", "oui", "merci", "utilise", "ça", "soit", "sont", "tout",
            "tous", "toutes",
        ],
        Lang::Es => &[
            "el", "los", "las", "una", "es", "que", "por", "para", "con", "del", "pero", "yo", "mi", "este", "esta",
            "está", "hay", "muy", "y", "lo", "se", "quiero", "puedes", "usa", "siempre", "nunca",
        ],
        Lang::Pt => &[
            "os", "um", "uma", "é", "não", "que", "para", "com", "do", "da", "dos", "das", "em", "na", "você", "isso",
            "está", "mas", "faça", "agora", "e", "eu", "seu", "sua", "quero", "sempre", "nunca",
        ],
        Lang::De => &[
            "ich", "du", "der", "die", "das", "und", "ist", "nicht", "mit", "ein", "eine", "auf", "für", "bitte",
            "wir", "sie", "es", "zu", "den", "dem", "auch", "noch", "immer", "nie", "kein", "keine",
        ],
        Lang::It => &[
            "il", "lo", "gli", "un", "una", "è", "non", "che", "per", "con", "della", "sono", "questo", "questa",
            "anche", "ma", "io", "sempre", "mai", "fai", "usa",
        ],
        Lang::Cs => &[
            "je", "se", "na", "že", "pro", "jak", "ale", "by", "mi", "mám", "není", "jsem", "tak", "už", "také",
            "když", "vždy", "nikdy", "prosím", "chci", "aby", "ať",
        ],
        Lang::Ru | Lang::Zh | Lang::Ja | Lang::Ko => &[],
    }
}

/// Letters only one language of the Latin group uses.
fn marks(lang: Lang) -> &'static [char] {
    match lang {
        Lang::Fr => &['ç', 'è', 'ê', 'à', 'ù', 'œ', 'î', 'ô', 'û'],
        Lang::Es => &['ñ', '¿', '¡'],
        Lang::Pt => &['ã', 'õ'],
        Lang::De => &['ä', 'ö', 'ü', 'ß'],
        Lang::Cs => &['ě', 'š', 'č', 'ř', 'ž', 'ů', 'ď', 'ť', 'ň'],
        _ => &[],
    }
}

/// The language a sentence is written in (see the module docs).
pub fn guess(s: &str) -> Lang {
    let (mut kana, mut han, mut hangul, mut cyrillic, mut latin) = (0usize, 0usize, 0usize, 0usize, 0usize);
    for c in s.chars() {
        match c as u32 {
            0x3040..=0x30FF => kana += 1,
            0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xF900..=0xFAFF => han += 1,
            0xAC00..=0xD7AF => hangul += 1,
            0x0400..=0x04FF => cyrillic += 1,
            _ if c.is_alphabetic() => latin += 1,
            _ => {}
        }
    }
    // Identifiers and commands in Latin letters are common inside CJK text;
    // three characters and a third of the letters make it that language.
    let cjk = kana + han + hangul;
    if cjk >= 3 && cjk * 3 >= latin {
        return if hangul > kana + han {
            Lang::Ko
        } else if kana > 0 {
            Lang::Ja
        } else {
            Lang::Zh
        };
    }
    if cyrillic >= 3 && cyrillic * 2 >= latin {
        return Lang::Ru;
    }
    let lower = s.to_lowercase().replace(['’', '‘'], "'");
    let tokens: Vec<&str> =
        lower.split(|c: char| !(c.is_alphanumeric() || c == '\'')).filter(|t| !t.is_empty()).collect();
    let english = tokens.iter().filter(|t| function_words(Lang::En).contains(t)).count();
    let mut best = (Lang::En, 0usize);
    for lang in LATIN {
        let words = tokens.iter().filter(|t| function_words(lang).contains(t)).count()
            + habit_markers(lang).iter().filter(|m| contains_word(&lower, m)).count();
        let letters = lower.chars().filter(|c| marks(lang).contains(c)).count().min(2);
        let score = words + letters;
        if score > best.1 {
            best = (lang, score);
        }
    }
    if best.1 >= 2 && best.1 > english { best.0 } else { Lang::En }
}

/// Markers of a lasting rule: "from now on", "always", "never", "every
/// time", "in general".
fn habit_markers(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Fr => &[
            "dorénavant",
            "désormais",
            "à partir de maintenant",
            "à l'avenir",
            "jamais",
            "à chaque fois",
            "chaque fois que",
            "de manière générale",
            "d'une manière générale",
            "en règle générale",
            "systématiquement",
        ],
        Lang::Es => &[
            "a partir de ahora",
            "de ahora en adelante",
            "en adelante",
            "siempre",
            "nunca",
            "jamás",
            "cada vez que",
            "por regla general",
        ],
        Lang::Pt => &[
            "a partir de agora",
            "de agora em diante",
            "daqui para frente",
            "daqui em diante",
            "sempre",
            "nunca",
            "jamais",
            "toda vez que",
            "de modo geral",
        ],
        Lang::De => &[
            "ab jetzt",
            "von nun an",
            "ab sofort",
            "künftig",
            "zukünftig",
            "in zukunft",
            "immer",
            "niemals",
            "nie",
            "jedes mal",
            "grundsätzlich",
        ],
        Lang::It => &["d'ora in poi", "da ora in poi", "d'ora in avanti", "sempre", "mai", "ogni volta", "in futuro"],
        Lang::Cs => {
            &["od teď", "odteď", "od této chvíle", "vždy", "vždycky", "nikdy", "pokaždé", "do budoucna", "zásadně"]
        }
        Lang::Ru => &["с этого момента", "отныне", "впредь", "всегда", "никогда", "каждый раз", "в дальнейшем"],
        Lang::Zh => &[
            "以后",
            "今后",
            "从现在开始",
            "从现在起",
            "从今以后",
            "总是",
            "始终",
            "永远",
            "每次",
            "一律",
            "务必",
            "一定要",
        ],
        Lang::Ja => &["今後", "これからは", "常に", "必ず", "毎回", "絶対に", "決して", "いつも"],
        Lang::Ko => &["앞으로", "항상", "절대", "매번", "반드시", "언제나"],
        Lang::En => &[],
    }
}

/// Words that turn a habit marker into something else: French "toujours pas"
/// and German "immer noch" say "still", "je n'ai jamais" tells a story.
fn habit_false_friends(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Fr => &[
            "toujours pas",
            "toujours le même",
            "toujours la même",
            "toujours les mêmes",
            "toujours un",
            "toujours une",
            "toujours des",
            "toujours rien",
            "ai jamais",
            "a jamais",
            "avais jamais",
            "toujours en train",
        ],
        Lang::De => &["immer noch", "noch immer", "immer wieder"],
        Lang::Es => &["sigue sin", "todavía"],
        Lang::Pt => &["ainda"],
        Lang::It => &["ancora"],
        Lang::Cs => &["pořád", "stále", "ne vždy"],
        Lang::Ru => &["всё ещё", "все еще", "до сих пор"],
        Lang::Zh => &["还是", "仍然", "依然"],
        Lang::Ja => &["まだ"],
        Lang::Ko => &["아직"],
        Lang::En => &[],
    }
}

/// Obligations and prohibitions in the languages written without spaces: a
/// rule when something is their subject ("测试必须串行运行", "不要和这个项目冲突").
/// In the other languages an obligation states a rule as often as it
/// specifies the feature at hand ("elle doit afficher un onglet", "il faut
/// rajouter un bouton"), so there only a marker of habit makes a rule.
fn modal_markers(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Zh => &["必须", "不要", "不能", "禁止", "不允许", "避免"],
        Lang::Ja => &["してはいけない", "しないでください", "禁止", "べき", "ないこと"],
        Lang::Ko => &["하지 마", "해야", "금지", "말아"],
        _ => &[],
    }
}

/// Words that point back at what was said or shown before ("ça",
/// "tel que demandé ci-dessus", "这样"): a rule that leans on them does not
/// stand alone.
fn points_back(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Fr => &["ça", "cela", "ci-dessus", "tel que demandé", "comme demandé", "ce fichier", "ces fichiers"],
        Lang::Es => &["así", "lo anterior", "como te dije", "este archivo", "ese archivo"],
        Lang::Pt => &["assim", "acima", "esse arquivo", "este arquivo", "como eu disse"],
        Lang::De => &["so wie", "wie oben", "diese datei", "das da"],
        Lang::It => &["così", "sopra", "questo file"],
        Lang::Cs => &["takhle", "takto", "výše", "tento soubor", "tenhle"],
        Lang::Ru => &["вот так", "выше", "этот файл"],
        Lang::Zh => &["这样", "那样", "这种", "那种", "上面", "同样", "这个文件", "那个"],
        Lang::Ja => &["このように", "上記", "そのように", "それを", "これを"],
        Lang::Ko => &["이렇게", "그렇게", "위의"],
        Lang::En => &[],
    }
}

/// Sentence-final particles that make a question without a question mark.
fn asks(end: &str, lang: Lang) -> bool {
    match lang {
        Lang::Zh => end.ends_with(['吗', '呢', '么']),
        Lang::Ja => end.ends_with("か") || end.ends_with("かな"),
        Lang::Ko => end.ends_with("까") || end.ends_with("나요"),
        _ => false,
    }
}

/// Openers of a correction of what the agent just did.
fn correction_openers(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Fr => &["non", "pas ça", "arrête", "ce n'est pas ça", "c'est faux", "faux"],
        Lang::Es => &["no", "eso no", "para", "está mal", "incorrecto"],
        Lang::Pt => &["não", "pare", "errado", "está errado"],
        Lang::De => &["nein", "falsch", "hör auf", "stopp", "nicht so"],
        Lang::It => &["no", "sbagliato", "fermati", "non così"],
        Lang::Cs => &["ne", "to ne", "špatně", "přestaň"],
        Lang::Ru => &["нет", "неправильно", "стоп", "не так"],
        Lang::Zh => &["不是", "不对", "错了", "别这样"],
        Lang::Ja => &["違います", "違う", "いいえ", "そうじゃな", "やめて"],
        Lang::Ko => &["아니", "틀렸", "하지 마"],
        Lang::En => &[],
    }
}

/// Words of the person speaking ("I", "me", "my").
fn first_person(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Fr => &["je", "j'", "me", "m'", "moi", "mon", "ma", "mes"],
        Lang::Es => &["yo", "me", "mi", "mis"],
        Lang::Pt => &["eu", "me", "meu", "minha", "meus", "minhas"],
        Lang::De => &["ich", "mir", "mich", "mein", "meine"],
        Lang::It => &["io", "mi", "mio", "mia", "miei"],
        Lang::Cs => &["já", "mi", "mě", "můj", "moje", "mám"],
        Lang::Ru => &["я", "мне", "меня", "мой", "моя"],
        Lang::Zh => &["我"],
        Lang::Ja => &["私", "僕", "俺"],
        Lang::Ko => &["나는", "저는", "제가", "내가"],
        Lang::En => &[],
    }
}

/// Words that place a rule in one project ("here", "this project").
fn local_words(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Fr => &["ici", "ce projet", "le projet", "ce dépôt", "ce repo", "cette app"],
        Lang::Es => &["aquí", "este proyecto", "el proyecto", "este repo"],
        Lang::Pt => &["aqui", "este projeto", "esse projeto", "o projeto", "este repo"],
        Lang::De => &["hier", "dieses projekt", "im projekt", "dieses repo"],
        Lang::It => &["qui", "questo progetto", "il progetto"],
        Lang::Cs => &["tady", "zde", "tento projekt", "v projektu"],
        Lang::Ru => &["здесь", "этот проект", "в проекте"],
        Lang::Zh => &["这个项目", "本项目", "该项目", "项目中", "这里"],
        Lang::Ja => &["このプロジェクト", "本プロジェクト", "ここ"],
        Lang::Ko => &["이 프로젝트", "여기"],
        Lang::En => &[],
    }
}

/// Language names, in the languages people ask to be answered in.
const LANGUAGE_NAMES: &[&str] = &[
    "français",
    "francais",
    "french",
    "anglais",
    "english",
    "inglés",
    "ingles",
    "español",
    "espanol",
    "spanish",
    "português",
    "portugues",
    "portuguese",
    "deutsch",
    "german",
    "allemand",
    "italiano",
    "italien",
    "italian",
    "česky",
    "čeština",
    "czech",
    "русском",
    "russian",
    "中文",
    "英文",
    "日文",
    "日本語",
    "英語",
    "한국어",
    "영어",
];

/// Verbs of answering and speaking, for "answer in French".
const SPEAK_VERBS: &[&str] = &[
    "répond",
    "réponds",
    "répondre",
    "réponde",
    "parle",
    "parles",
    "parler",
    "responde",
    "responda",
    "respondas",
    "habla",
    "hables",
    "fala",
    "fale",
    "antworte",
    "antworten",
    "sprich",
    "rispondi",
    "parla",
    "odpovídej",
    "odpovídat",
    "odpověz",
    "mluv",
    "отвечай",
    "отвечать",
    "говори",
    "回答",
    "回复",
    "答えて",
    "回答して",
    "話して",
    "대답",
    "답해",
    "말해",
    "answer",
    "reply",
    "respond",
    "speak",
    "talk",
];

/// Prepositions before a language's name ("en français", "in English"),
/// and the particles around it in CJK ("用中文", "日本語で", "한국어로").
const IN_LANGUAGE: &[&str] = &["en", "in", "em", "auf", "на", "po", "v", "用", "で", "로"];

fn lower(s: &str) -> String {
    super::prose::normalize(s)
}

fn is_cjk_lang(lang: Lang) -> bool {
    matches!(lang, Lang::Zh | Lang::Ja | Lang::Ko)
}

/// Whether `word` occurs in the lower-cased `l` as words: words of scripts
/// with spaces need a boundary on both sides ("nie" is not inside
/// "niemand"; a word ending in an apostrophe, "j'", only before), words
/// written without spaces match anywhere.
pub fn contains_word(l: &str, word: &str) -> bool {
    if word.chars().any(quality::is_cjk) {
        return l.contains(word);
    }
    let mut from = 0;
    while let Some(p) = l[from..].find(word) {
        let at = from + p;
        let end = at + word.len();
        let before = l[..at].chars().next_back().is_none_or(|c| !c.is_alphanumeric());
        let after = word.ends_with('\'') || l[end..].chars().next().is_none_or(|c| !c.is_alphanumeric());
        if before && after {
            return true;
        }
        from = at + l[at..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

fn any(l: &str, words: &[&str]) -> bool {
    words.iter().any(|w| contains_word(l, w))
}

/// Whether a sentence asks to be answered in a named language ("réponds en
/// français", "用中文回答"): the user's preference everywhere.
pub fn asks_for_language(s: &str) -> bool {
    let l = format!(" {} ", lower(s));
    let named = LANGUAGE_NAMES.iter().any(|n| {
        IN_LANGUAGE.iter().any(|p| {
            if p.chars().any(quality::is_cjk) {
                l.contains(&format!("{p}{n}")) || l.contains(&format!("{n}{p}"))
            } else {
                l.contains(&format!(" {p} {n}"))
            }
        })
    });
    named
        && SPEAK_VERBS.iter().any(|v| if v.chars().any(quality::is_cjk) { l.contains(v) } else { contains_word(&l, v) })
}

/// What a sentence not in English does ([`Role::Rule`], [`Role::Question`]
/// or [`Role::Other`]); `None` for English, which [`super::prose::role`]
/// reads with its own grammar.
pub fn role(s: &str) -> Option<Role> {
    let t = s.trim();
    let end = t.trim_end_matches(['"', '\'', '”', '’', ')', '*', '_', ' ', '!', '！', '.', '。']);
    let question = end.ends_with('?') || end.ends_with('？');
    // "Réponds en français", "answer in English": in any language.
    if asks_for_language(t) && !question {
        return Some(Role::Rule);
    }
    let lang = guess(s);
    if lang == Lang::En {
        return None;
    }
    if question || asks(end, lang) {
        return Some(Role::Question);
    }
    let l = lower(t);
    if any(&l, points_back(lang)) {
        return Some(Role::Other);
    }
    if any(&l, habit_markers(lang)) && !any(&l, habit_false_friends(lang)) {
        return Some(Role::Rule);
    }
    // An obligation with something before it: "le code doit être factorisé",
    // "测试必须串行运行"; at the very start it asks for the task at hand.
    let subject = |m: &str| {
        l.find(m).is_some_and(|p| {
            let before = &l[..p];
            if is_cjk_lang(lang) {
                before.chars().filter(|c| c.is_alphanumeric()).count() >= 2
            } else {
                before.split_whitespace().count() >= 1
            }
        })
    };
    if modal_markers(lang).iter().any(|m| contains_word(&l, m) && subject(m)) {
        return Some(Role::Rule);
    }
    Some(Role::Other)
}

/// "Instead of": a message right after the agent acted that names the way
/// it should have gone corrects it, wherever the words stand.
fn instead_of(lang: Lang) -> &'static [&'static str] {
    match lang {
        Lang::Fr => &["au lieu de", "au lieu d'", "plutôt que"],
        Lang::Es => &["en lugar de", "en vez de"],
        Lang::Pt => &["em vez de", "ao invés de"],
        Lang::De => &["statt", "anstatt"],
        Lang::It => &["invece di", "anziché"],
        Lang::Cs => &["místo"],
        Lang::Ru => &["вместо"],
        Lang::Zh => &["而不是", "不要用", "别用", "改用"],
        Lang::Ja => &["ではなく", "じゃなくて", "を使わず"],
        Lang::Ko => &["대신"],
        Lang::En => &[],
    }
}

/// Whether a message not in English, right after the agent acted, corrects
/// it: its first sentence opens with a correction, or it says "instead of";
/// `None` for English.
pub fn is_correction(first_sentence: &str, whole: &str) -> Option<bool> {
    let lang = guess(first_sentence);
    if lang == Lang::En {
        return None;
    }
    Some(opener(first_sentence, lang).is_some() || any(&lower(whole), instead_of(lang)))
}

/// The byte length of the correction opener `s` starts with, if any.
fn opener(s: &str, lang: Lang) -> Option<usize> {
    let t = s.trim_start();
    let l = lower(t);
    correction_openers(lang).iter().find_map(|o| {
        let rest = l.strip_prefix(o)?;
        let ok = if is_cjk_lang(lang) {
            true
        } else {
            rest.is_empty() || rest.starts_with([' ', ',', '.', '!', ':', '-', '—'])
        };
        // The lower-cased text has the same length as the original for the
        // openers listed (their letters lower-case within the same width).
        let cut = s.len() - t.len() + o.len();
        (ok && s.is_char_boundary(cut)).then_some(cut)
    })
}

/// The sentence without its correction opener ("Non, " "不对，"), when it is
/// not in English; `None` for English.
pub fn strip_correction_opener(s: &str) -> Option<&str> {
    let lang = guess(s);
    if lang == Lang::En {
        return None;
    }
    Some(match opener(s, lang) {
        Some(cut) => s[cut..].trim_start_matches([',', '.', '!', ':', '-', '—', ' ', '，', '。', '！', '、']),
        None => s,
    })
}

/// Whether a rule not in English is the user's own way of working (speaks of
/// the person, places itself in no project, names no code); `None` for
/// English.
pub fn is_personal(s: &str) -> Option<bool> {
    if asks_for_language(s) {
        return Some(true);
    }
    let lang = guess(s);
    if lang == Lang::En {
        return None;
    }
    let l = lower(s);
    let personal = if is_cjk_lang(lang) {
        first_person(lang).iter().any(|w| l.contains(w))
    } else {
        l.split(|c: char| !(c.is_alphanumeric() || c == '\''))
            .any(|w| first_person(lang).iter().any(|p| w == *p || (p.ends_with('\'') && w.starts_with(p))))
    };
    let local = any(&l, local_words(lang));
    let code = s.contains('`') || s.split_whitespace().any(|x| x.contains(['/', '_', '=']) || x.contains("::"));
    Some(personal && !local && !code)
}

/// Words of approval and thanks: a "no" they follow answers a question ("Non
/// pas du tout, … je te remercie"), it corrects nothing.
const APPROVAL: &[&str] = &[
    "merci",
    "remercie",
    "parfait",
    "super",
    "c'est bon",
    "génial",
    "merveilleux",
    "d'accord",
    "gracias",
    "perfecto",
    "genial",
    "vale",
    "obrigado",
    "obrigada",
    "perfeito",
    "ótimo",
    "beleza",
    "danke",
    "perfekt",
    "passt",
    "grazie",
    "perfetto",
    "ottimo",
    "díky",
    "děkuji",
    "perfektní",
    "výborně",
    "спасибо",
    "отлично",
    "谢谢",
    "好的",
    "完美",
    "不错",
    "ありがとう",
    "完璧",
    "감사",
    "좋아",
];

/// Whether a sentence not in English approves or thanks; `None` for English.
pub fn approves(s: &str) -> Option<bool> {
    let lang = guess(s);
    if lang == Lang::En {
        return None;
    }
    Some(any(&lower(s), APPROVAL))
}

/// Words that carry no subject in a correction ("ce n'est pas vrai", "不是这样").
const EMPTY_WORDS: &[&str] = &[
    "pas",
    "vrai",
    "faux",
    "bien",
    "comme",
    "fait",
    "voulais",
    "dit",
    "verdad",
    "así",
    "eso",
    "isso",
    "assim",
    "certo",
    "so",
    "richtig",
    "gemeint",
    "così",
    "vero",
    "tak",
    "takhle",
    "pravda",
    "так",
    "это",
    "правда",
];
/// Characters of Chinese and Japanese that name nothing on their own.
const EMPTY_CHARS: &str =
    "这那是不的了吗呢吧个样我你他它们在有就都也还对错要别没说过想意思ですかねよをはがにでとのもいいえそうじゃな";

/// Whether a sentence not in English names nothing ("ce n'est pas vrai",
/// "不是这样"); `None` for English.
pub fn says_nothing(s: &str) -> Option<bool> {
    let lang = guess(s);
    if lang == Lang::En {
        return None;
    }
    if is_cjk_lang(lang) {
        let content = s.chars().filter(|c| quality::is_cjk(*c) && !EMPTY_CHARS.contains(*c)).count();
        let latin = s.split(|c: char| !c.is_ascii_alphanumeric()).filter(|w| w.len() >= 3).count();
        return Some(content + 2 * latin <= 3);
    }
    let l = lower(s);
    let content = l
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|w| w.chars().count() >= 3)
        .filter(|w| {
            !function_words(lang).contains(w) && !EMPTY_WORDS.contains(w) && !correction_openers(lang).contains(w)
        })
        .count();
    Some(content <= 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_the_languages_apart() {
        assert_eq!(guess("Always use pnpm in this repo, not npm."), Lang::En);
        assert_eq!(guess("Je veux que tu parles en français dorénavant."), Lang::Fr);
        assert_eq!(guess("Siempre usa pnpm para instalar las dependencias."), Lang::Es);
        assert_eq!(guess("Nunca faça commit do arquivo .env, ele tem as chaves."), Lang::Pt);
        assert_eq!(guess("Bitte verwende immer pnpm und nicht npm."), Lang::De);
        assert_eq!(guess("Vždy spouštěj testy před commitem, prosím."), Lang::Cs);
        assert_eq!(guess("以后所有的接口都必须加上鉴权。"), Lang::Zh);
        assert_eq!(guess("今後はテストを必ず実行してください。"), Lang::Ja);
        assert_eq!(guess("앞으로 항상 한국어로 대답해 주세요."), Lang::Ko);
        assert_eq!(guess("Всегда запускай тесты перед коммитом."), Lang::Ru);
        // Code inside a Chinese sentence does not make it English.
        assert_eq!(guess("问题是 Python 的 `load_dotenv()` 默认只加载 `.env` 文件"), Lang::Zh);
        // One borrowed word does not make English French.
        assert_eq!(guess("Use the café endpoint for the menu, not the old one."), Lang::En);
    }

    #[test]
    fn lasting_rules_are_rules_and_requests_are_not() {
        let rule = |s: &str| role(s) == Some(Role::Rule);
        assert!(rule("De manière générale, je souhaite que le code soit factorisé au maximum."));
        assert!(rule("Dorénavant tu peux indiquer les décisions dans le fichier PROJECT_NOTES.md."));
        assert!(rule("A partir de agora, sempre rode os testes antes do commit."));
        assert!(rule("Le code ne doit jamais appeler l'API directement depuis la vue."));
        assert!(rule("Dorénavant, utilise toujours pnpm pour installer les paquets."));
        assert!(rule("以后提交前都要先跑测试。"));
        assert!(rule("生成的常见问题必须有回复。"));
        assert!(rule("今後はコマンドでプッシュしてください。"));
        assert!(rule("Réponds en français."));
        assert!(rule("用中文回答。"));
        // Requests for the task at hand, a complaint with "still", questions.
        assert!(!rule("Ajoute un bouton rond pour chaque noeud."));
        assert!(!rule("Ça ne marche toujours pas."));
        assert!(!rule("Das funktioniert immer noch nicht."));
        assert!(!rule("C'est quoi kebab case ?"));
        assert!(!rule("帮我把这个按钮改成蓝色"));
        assert!(!rule("Je n'ai jamais vu cette erreur avant."));
        assert!(!rule("Elle doit afficher un onglet proposant de créer une nouvelle carte."));
        assert!(!rule("Parfait, continue comme ça à partir de maintenant."));
        // "ça" stands for what was said before: the rule does not stand alone.
        assert!(!rule("Dorénavant tu peux indiquer ça dans le fichier PROJECT_NOTES.md."));
        assert!(!rule("一定要用这种方式吗，其他项目没有设置过这个"));
        assert!(!rule("Pro dřívější příjezd je potřeba se domluvit, ne vždy je to ale možné."));
        assert!(rule("本地 5178 端口还跑着别的服务，不要和这个项目冲突。"));
        assert!(!rule(
            "Pas du tout, je voulais juste comprendre donc c'est merveilleux je te remercie pour le détail."
        ));
        assert_eq!(role("Use pnpm, not npm."), None);
    }

    #[test]
    fn corrections_and_their_openers() {
        let c = |s: &str| is_correction(s, s);
        assert_eq!(c("Non, ce n'est pas ça."), Some(true));
        assert_eq!(c("Nonobstant cela, tu peux continuer avec le code."), Some(false));
        assert_eq!(c("不对，应该用 pnpm。"), Some(true));
        assert_eq!(c(".specstoryをMCPのgithubを使わずコマンドでプッシュしてください。"), Some(true));
        assert_eq!(c("Utilise pnpm au lieu de npm pour ce dépôt."), Some(true));
        assert_eq!(c("No, use pnpm."), None);
        assert_eq!(strip_correction_opener("Non, utilise toujours pnpm."), Some("utilise toujours pnpm."));
        assert_eq!(strip_correction_opener("不对，应该用 pnpm。"), Some("应该用 pnpm。"));
        assert_eq!(says_nothing("ce n'est pas vrai."), Some(true));
        assert_eq!(
            approves("pas du tout, je voulais juste comprendre donc c'est merveilleux je te remercie"),
            Some(true)
        );
        assert_eq!(approves("utilise pnpm et jamais npm dans ce dépôt"), Some(false));
        assert_eq!(says_nothing("不是这样的"), Some(true));
        assert_eq!(says_nothing("utilise toujours pnpm pour installer."), Some(false));
        assert_eq!(says_nothing("应该用 pnpm 安装依赖"), Some(false));
    }

    #[test]
    fn personal_preferences_are_the_persons() {
        assert_eq!(is_personal("Je souhaite dorénavant que tu me parles en français."), Some(true));
        assert_eq!(is_personal("Dorénavant, dans ce projet, je veux des tests pour chaque route."), Some(false));
        assert_eq!(is_personal("我希望以后都用中文回答。"), Some(true));
        assert_eq!(is_personal("Always answer me in English."), Some(true));
        assert_eq!(is_personal("Always run the tests before you commit."), None);
    }
}
