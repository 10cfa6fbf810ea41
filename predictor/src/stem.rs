//! Porter's suffix-stripping stemmer (M. F. Porter, 1980) for lower-case ASCII words.
//!
//! `paint`, `painted`, `painting` and `paints` all become `paint`, so a query
//! and a memory that use different forms of a word share a token. Words with
//! non-ASCII letters, digits or fewer than three letters are returned as they
//! are. The algorithm is the one of the original paper (steps 1a–5b).

use std::borrow::Cow;

/// The stem of a lower-case word.
pub fn stem(word: &str) -> Cow<'_, str> {
    if word.len() < 3 || !word.bytes().all(|b| b.is_ascii_lowercase()) {
        return Cow::Borrowed(word);
    }
    let mut w = Word { b: word.as_bytes().to_vec() };
    w.step1a();
    w.step1b();
    w.step1c();
    w.step2();
    w.step3();
    w.step4();
    w.step5();
    if w.b == word.as_bytes() {
        Cow::Borrowed(word)
    } else {
        // Only ASCII letters were kept or written.
        Cow::Owned(w.b.iter().map(|&c| c as char).collect())
    }
}

struct Word {
    b: Vec<u8>,
}

impl Word {
    /// Whether the letter at `i` is a consonant (`y` is one after a vowel or at the start).
    fn cons(&self, i: usize) -> bool {
        match self.b[i] {
            b'a' | b'e' | b'i' | b'o' | b'u' => false,
            b'y' => i == 0 || !self.cons(i - 1),
            _ => true,
        }
    }

    /// The measure `m` of the first `len` letters: the number of VC sequences.
    fn measure(&self, len: usize) -> usize {
        let mut m = 0;
        let mut i = 0;
        while i < len && self.cons(i) {
            i += 1;
        }
        loop {
            while i < len && !self.cons(i) {
                i += 1;
            }
            if i >= len {
                return m;
            }
            while i < len && self.cons(i) {
                i += 1;
            }
            m += 1;
        }
    }

    fn has_vowel(&self, len: usize) -> bool {
        (0..len).any(|i| !self.cons(i))
    }

    fn double_consonant(&self, len: usize) -> bool {
        len >= 2 && self.b[len - 1] == self.b[len - 2] && self.cons(len - 1)
    }

    /// `*o`: the first `len` letters end consonant-vowel-consonant, the last not w, x or y.
    fn cvc(&self, len: usize) -> bool {
        len >= 3
            && self.cons(len - 3)
            && !self.cons(len - 2)
            && self.cons(len - 1)
            && !matches!(self.b[len - 1], b'w' | b'x' | b'y')
    }

    fn ends(&self, suffix: &str) -> bool {
        self.b.ends_with(suffix.as_bytes())
    }

    /// Replaces `suffix` (which the word ends with) by `with`.
    fn set(&mut self, suffix: &str, with: &str) {
        let keep = self.b.len() - suffix.len();
        self.b.truncate(keep);
        self.b.extend_from_slice(with.as_bytes());
    }

    /// Replaces `suffix` by `with` if the stem before it has measure > `min`.
    /// Returns whether the word ended with `suffix` (replaced or not).
    fn replace_if(&mut self, suffix: &str, with: &str, min: usize) -> bool {
        if !self.ends(suffix) {
            return false;
        }
        if self.measure(self.b.len() - suffix.len()) > min {
            self.set(suffix, with);
        }
        true
    }

    fn step1a(&mut self) {
        if self.ends("sses") {
            self.set("sses", "ss");
        } else if self.ends("ies") {
            self.set("ies", "i");
        } else if self.ends("ss") {
        } else if self.ends("s") {
            self.set("s", "");
        }
    }

    fn step1b(&mut self) {
        if self.ends("eed") {
            self.replace_if("eed", "ee", 0);
            return;
        }
        let removed = if self.ends("ed") && self.has_vowel(self.b.len() - 2) {
            self.set("ed", "");
            true
        } else if self.ends("ing") && self.has_vowel(self.b.len() - 3) {
            self.set("ing", "");
            true
        } else {
            false
        };
        if !removed {
            return;
        }
        if self.ends("at") || self.ends("bl") || self.ends("iz") {
            self.b.push(b'e');
        } else if self.double_consonant(self.b.len()) && !matches!(self.b[self.b.len() - 1], b'l' | b's' | b'z') {
            self.b.pop();
        } else if self.measure(self.b.len()) == 1 && self.cvc(self.b.len()) {
            self.b.push(b'e');
        }
    }

    fn step1c(&mut self) {
        if self.ends("y") && self.has_vowel(self.b.len() - 1) {
            self.set("y", "i");
        }
    }

    fn step2(&mut self) {
        const RULES: &[(&str, &str)] = &[
            ("ational", "ate"),
            ("tional", "tion"),
            ("enci", "ence"),
            ("anci", "ance"),
            ("izer", "ize"),
            ("abli", "able"),
            ("alli", "al"),
            ("entli", "ent"),
            ("eli", "e"),
            ("ousli", "ous"),
            ("ization", "ize"),
            ("ation", "ate"),
            ("ator", "ate"),
            ("alism", "al"),
            ("iveness", "ive"),
            ("fulness", "ful"),
            ("ousness", "ous"),
            ("aliti", "al"),
            ("iviti", "ive"),
            ("biliti", "ble"),
        ];
        for (suffix, with) in RULES {
            if self.replace_if(suffix, with, 0) {
                return;
            }
        }
    }

    fn step3(&mut self) {
        const RULES: &[(&str, &str)] = &[
            ("icate", "ic"),
            ("ative", ""),
            ("alize", "al"),
            ("iciti", "ic"),
            ("ical", "ic"),
            ("ful", ""),
            ("ness", ""),
        ];
        for (suffix, with) in RULES {
            if self.replace_if(suffix, with, 0) {
                return;
            }
        }
    }

    fn step4(&mut self) {
        const SUFFIXES: &[&str] = &[
            "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment", "ent", "ion", "ou", "ism", "ate",
            "iti", "ous", "ive", "ize",
        ];
        for suffix in SUFFIXES {
            if !self.ends(suffix) {
                continue;
            }
            let len = self.b.len() - suffix.len();
            if *suffix == "ion" && !(len > 0 && matches!(self.b[len - 1], b's' | b't')) {
                return;
            }
            if self.measure(len) > 1 {
                self.b.truncate(len);
            }
            return;
        }
    }

    fn step5(&mut self) {
        let len = self.b.len();
        if self.ends("e") {
            let m = self.measure(len - 1);
            if m > 1 || (m == 1 && !self.cvc(len - 1)) {
                self.b.pop();
            }
        }
        let len = self.b.len();
        if self.b.last() == Some(&b'l') && self.double_consonant(len) && self.measure(len) > 1 {
            self.b.pop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn examples_from_the_paper() {
        let cases = [
            ("caresses", "caress"),
            ("ponies", "poni"),
            ("ties", "ti"),
            ("caress", "caress"),
            ("cats", "cat"),
            ("feed", "feed"),
            ("agreed", "agre"),
            ("plastered", "plaster"),
            ("bled", "bled"),
            ("motoring", "motor"),
            ("sing", "sing"),
            ("conflated", "conflat"),
            ("troubled", "troubl"),
            ("sized", "size"),
            ("hopping", "hop"),
            ("tanned", "tan"),
            ("falling", "fall"),
            ("hissing", "hiss"),
            ("fizzed", "fizz"),
            ("failing", "fail"),
            ("filing", "file"),
            ("happy", "happi"),
            ("sky", "sky"),
            ("relational", "relat"),
            ("conditional", "condit"),
            ("rational", "ration"),
            ("valenci", "valenc"),
            ("hesitanci", "hesit"),
            ("digitizer", "digit"),
            ("conformabli", "conform"),
            ("radicalli", "radic"),
            ("differentli", "differ"),
            ("vileli", "vile"),
            ("analogousli", "analog"),
            ("vietnamization", "vietnam"),
            ("predication", "predic"),
            ("operator", "oper"),
            ("feudalism", "feudal"),
            ("decisiveness", "decis"),
            ("hopefulness", "hope"),
            ("callousness", "callous"),
            ("formaliti", "formal"),
            ("sensitiviti", "sensit"),
            ("sensibiliti", "sensibl"),
            ("triplicate", "triplic"),
            ("formative", "form"),
            ("formalize", "formal"),
            ("electriciti", "electr"),
            ("electrical", "electr"),
            ("hopeful", "hope"),
            ("goodness", "good"),
            ("revival", "reviv"),
            ("allowance", "allow"),
            ("inference", "infer"),
            ("airliner", "airlin"),
            ("gyroscopic", "gyroscop"),
            ("adjustable", "adjust"),
            ("defensible", "defens"),
            ("irritant", "irrit"),
            ("replacement", "replac"),
            ("adjustment", "adjust"),
            ("dependent", "depend"),
            ("adoption", "adopt"),
            ("homologou", "homolog"),
            ("communism", "commun"),
            ("activate", "activ"),
            ("angulariti", "angular"),
            ("homologous", "homolog"),
            ("effective", "effect"),
            ("bowdlerize", "bowdler"),
            ("probate", "probat"),
            ("rate", "rate"),
            ("cease", "ceas"),
            ("controll", "control"),
            ("roll", "roll"),
        ];
        for (word, want) in cases {
            assert_eq!(stem(word), want, "stem({word})");
        }
    }

    #[test]
    fn word_forms_meet() {
        for w in ["paint", "painted", "painting", "paints"] {
            assert_eq!(stem(w), "paint");
        }
        assert_eq!(stem("camping"), stem("camped"));
        assert_eq!(stem("counseling"), stem("counsel"));
    }

    #[test]
    fn leaves_other_tokens_alone() {
        for w in ["a", "to", "x86", "café", "v2", "snake_case", "ABC"] {
            assert_eq!(stem(w), w);
        }
    }
}
