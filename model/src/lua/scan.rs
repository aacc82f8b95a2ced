//! What the scenario reader learns from a script's text without running it: the
//! commands it names literally and the libraries it names that the model does not
//! implement. Comments are no code: a command or library named only in one is ignored.

/// One piece of a script's text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Piece {
    Code,
    Str,
    Comment,
}

/// The level of a long bracket opening at `at` (`[[` is 0, `[==[` is 2).
fn long_bracket(bytes: &[u8], at: usize) -> Option<usize> {
    if bytes.get(at) != Some(&b'[') {
        return None;
    }
    let level = bytes[at + 1..].iter().take_while(|&&b| b == b'=').count();
    (bytes.get(at + 1 + level) == Some(&b'[')).then_some(level)
}

/// The end (exclusive) of a long bracket of `level` whose content starts at `from`.
fn long_end(text: &str, from: usize, level: usize) -> usize {
    let close = format!("]{}]", "=".repeat(level));
    text[from..]
        .find(&close)
        .map_or(text.len(), |i| from + i + close.len())
}

/// Each byte's piece: code, string literal (quotes included) or comment.
fn pieces(text: &str) -> Vec<Piece> {
    let bytes = text.as_bytes();
    let mut kind = vec![Piece::Code; bytes.len()];
    let mut i = 0;
    while i < bytes.len() {
        let (piece, end) = match bytes[i] {
            b'-' if bytes.get(i + 1) == Some(&b'-') => {
                let end = match long_bracket(bytes, i + 2) {
                    Some(level) => long_end(text, i + 4 + level, level),
                    None => text[i..].find('\n').map_or(text.len(), |n| i + n),
                };
                (Piece::Comment, end)
            }
            quote @ (b'\'' | b'"') => {
                let mut j = i + 1;
                while j < bytes.len() && bytes[j] != quote && bytes[j] != b'\n' {
                    j += if bytes[j] == b'\\' { 2 } else { 1 };
                }
                (Piece::Str, (j + 1).min(bytes.len()))
            }
            b'[' => match long_bracket(bytes, i) {
                Some(level) => (Piece::Str, long_end(text, i + 2 + level, level)),
                None => (Piece::Code, i + 1),
            },
            _ => (Piece::Code, i + 1),
        };
        kind[i..end].fill(piece);
        i = end;
    }
    kind
}

/// `text` with every byte not of `keep` replaced by a space (newlines kept, so lines
/// stay where they were).
fn only(text: &str, keep: &[Piece]) -> String {
    let kinds = pieces(text);
    text.bytes()
        .zip(kinds)
        .map(|(b, k)| {
            if b == b'\n' || keep.contains(&k) {
                char::from(b)
            } else {
                ' '
            }
        })
        .collect()
}

/// The commands a script names literally, `redis.call('get', ...)` or
/// `redis.pcall("SET", ...)`, each with its 1-based line in the script.
pub fn called_commands(text: &str) -> Vec<(String, usize)> {
    // Non-ASCII bytes become spaces too; names are ASCII.
    let code = only(text, &[Piece::Code, Piece::Str]);
    let mut found = Vec::new();
    for (i, line) in code.lines().enumerate() {
        for prefix in ["redis.call", "redis.pcall"] {
            let mut rest = line;
            while let Some(at) = rest.find(prefix) {
                rest = &rest[at + prefix.len()..];
                let after = rest.trim_start();
                let Some(after) = after.strip_prefix('(') else {
                    continue;
                };
                let after = after.trim_start();
                let Some(quote) = after.chars().next().filter(|c| *c == '\'' || *c == '"') else {
                    continue;
                };
                if let Some(end) = after[1..].find(quote) {
                    found.push((after[1..=end].to_string(), i + 1));
                }
            }
        }
    }
    found
}

/// The first word of `words` (compared without case, as Redis reads command names and
/// options) that the script's string literals contain as a whole word, with its line (1-based).
pub fn literal_word(text: &str, words: &[&'static str]) -> Option<(&'static str, usize)> {
    let strings = only(text, &[Piece::Str]);
    strings.lines().enumerate().find_map(|(i, line)| {
        line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
            .find_map(|w| words.iter().find(|n| n.eq_ignore_ascii_case(w)))
            .map(|&n| (n, i + 1))
    })
}

/// The libraries Redis loads that the model does not implement (`struct`,
/// `cmsgpack`), where the script's code (not a comment or string) names them, each with
/// its 1-based line.
pub fn unimplemented_libraries(text: &str) -> Vec<(&'static str, usize)> {
    let code = only(text, &[Piece::Code]);
    let mut found = Vec::new();
    for (i, line) in code.lines().enumerate() {
        let words = line.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'));
        for word in words {
            if let Some(name) = ["struct", "cmsgpack"].into_iter().find(|n| *n == word) {
                found.push((name, i + 1));
            }
        }
    }
    found
}
