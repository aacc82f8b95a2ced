//! [`Text`]: a short immutable string kept in place: a lock machine's tokens, and the
//! model's strings of the abstract Redis's data (keys, values, hash fields, list
//! elements).
//!
//! The model checker copies a state, every client's machine and every node's data in
//! it, for every step it tries, and drops most of the copies (the step led to a state
//! already seen). With `String`s, every token and every key and value was an allocation
//! and a free on each copy: on five Redlock masters, about a tenth of the search's time.
//! Tokens and keys are a few bytes (`lock`, `t12`; the driver's `client-id:attempt`), so
//! a `Text` of up to [`INLINE`] bytes is stored in place and copied with its owner; a
//! longer one is boxed.
//!
//! A `Text` hashes, compares, orders and prints exactly as the `str` it holds (and so as
//! the `String` it replaces): a state's fingerprint, and with it the representative the
//! search keeps and the counterexample it reports, do not depend on the representation.

use std::borrow::Borrow;
use std::fmt;
use std::hash::{Hash, Hasher};
use std::ops::Deref;

/// The longest text kept in place: with its length byte and the enum's tag, a `Text`
/// is 24 bytes, as a `String` is.
pub const INLINE: usize = 22;

/// An immutable string, in place up to [`INLINE`] bytes.
#[derive(Clone)]
pub struct Text(Repr);

#[derive(Clone)]
enum Repr {
    /// `bytes[..len]` is the text, copied from a `&str` (so valid UTF-8).
    Inline {
        len: u8,
        bytes: [u8; INLINE],
    },
    Boxed(Box<str>),
}

impl Text {
    /// The text `s`.
    pub fn new(s: &str) -> Text {
        match u8::try_from(s.len()) {
            Ok(len) if s.len() <= INLINE => {
                let mut bytes = [0; INLINE];
                bytes[..s.len()].copy_from_slice(s.as_bytes());
                Text(Repr::Inline { len, bytes })
            }
            _ => Text(Repr::Boxed(s.into())),
        }
    }

    /// The text as a `str`.
    pub fn as_str(&self) -> &str {
        match &self.0 {
            Repr::Inline { len, bytes } => {
                let bytes = &bytes[..usize::from(*len)];
                // SAFETY: `bytes[..len]` was copied whole from a `&str` by `Text::new`
                // and is never written again, so it is valid UTF-8.
                unsafe { std::str::from_utf8_unchecked(bytes) }
            }
            Repr::Boxed(s) => s,
        }
    }
}

impl Deref for Text {
    type Target = str;
    fn deref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<str> for Text {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl Borrow<str> for Text {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl From<&str> for Text {
    fn from(s: &str) -> Text {
        Text::new(s)
    }
}

impl From<&String> for Text {
    fn from(s: &String) -> Text {
        Text::new(s)
    }
}

impl From<String> for Text {
    fn from(s: String) -> Text {
        Text::new(&s)
    }
}

impl From<&Text> for String {
    fn from(t: &Text) -> String {
        t.as_str().to_string()
    }
}

impl From<Text> for String {
    fn from(t: Text) -> String {
        t.as_str().to_string()
    }
}

/// As the `str`: `write` of the bytes, then `0xff` (what the fingerprint's hasher and
/// its token renaming rely on).
impl Hash for Text {
    fn hash<H: Hasher>(&self, h: &mut H) {
        self.as_str().hash(h)
    }
}

impl PartialEq for Text {
    fn eq(&self, other: &Text) -> bool {
        self.as_str() == other.as_str()
    }
}

impl Eq for Text {}

impl PartialEq<str> for Text {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<&str> for Text {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<String> for Text {
    fn eq(&self, other: &String) -> bool {
        self.as_str() == other
    }
}

impl PartialEq<Text> for String {
    fn eq(&self, other: &Text) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Text> for str {
    fn eq(&self, other: &Text) -> bool {
        self == other.as_str()
    }
}

impl PartialEq<Text> for &str {
    fn eq(&self, other: &Text) -> bool {
        *self == other.as_str()
    }
}

impl PartialOrd for Text {
    fn partial_cmp(&self, other: &Text) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for Text {
    fn cmp(&self, other: &Text) -> std::cmp::Ordering {
        self.as_str().cmp(other.as_str())
    }
}

impl fmt::Debug for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

impl fmt::Display for Text {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self.as_str(), f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every hasher call a value makes, in order.
    #[derive(Default)]
    struct Calls(Vec<String>);

    impl Hasher for Calls {
        fn write(&mut self, bytes: &[u8]) {
            self.0.push(format!("write {bytes:?}"));
        }
        fn write_u8(&mut self, i: u8) {
            self.0.push(format!("u8 {i}"));
        }
        fn write_usize(&mut self, i: usize) {
            self.0.push(format!("usize {i}"));
        }
        fn finish(&self) -> u64 {
            0
        }
    }

    fn calls<T: Hash + ?Sized>(v: &T) -> Vec<String> {
        let mut h = Calls::default();
        v.hash(&mut h);
        h.0
    }

    /// In place and boxed alike, a `Text` is the `String` it replaces to the hasher,
    /// to comparisons and orders, and in print.
    #[test]
    fn a_text_is_its_string_to_hashers_comparisons_and_print() {
        let long = "x".repeat(INLINE + 1);
        let samples = ["", "t1", "lock", "é", &"y".repeat(INLINE), &long];
        for a in samples {
            let t = Text::new(a);
            assert_eq!(t.as_str(), a);
            assert_eq!(calls(&t), calls(&a.to_string()), "{a}");
            assert_eq!(
                calls(&vec![(t.clone(), Text::from("v"))]),
                calls(&vec![(a.to_string(), "v".to_string())])
            );
            assert_eq!(format!("{t:?} {t}"), format!("{a:?} {a}"));
            for b in samples {
                let u = Text::new(b);
                assert_eq!(t == u, a == b);
                assert_eq!(t.cmp(&u), a.cmp(b), "{a} {b}");
            }
        }
        assert!(matches!(Text::new(&long).0, Repr::Boxed(_)));
        assert!(matches!(Text::new(&long[1..]).0, Repr::Inline { .. }));
        assert_eq!(std::mem::size_of::<Text>(), std::mem::size_of::<String>());
    }
}
