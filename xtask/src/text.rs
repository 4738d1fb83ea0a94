//! Text as pages show it: the one escaping rule for evidence text in Markdown, below
//! every module that writes page words (`pages`, a family's page text).

/// Evidence text as a page shows it, literally: Markdown markup escaped with a
/// backslash (a `|` would split a table cell, a backtick open a code span), control
/// characters made visible, so a cell stays one cell. A run of `_` between two letters
/// or digits is left alone (`get_random_number`): Markdown never reads it as emphasis.
pub fn md(s: &str) -> String {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::with_capacity(s.len());
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c == '_' {
            let end = chars[i..].iter().position(|&a| a != '_').map_or(chars.len(), |n| i + n);
            let word = |c: Option<&char>| c.is_some_and(char::is_ascii_alphanumeric);
            let escape = !(i > 0 && word(chars.get(i - 1)) && word(chars.get(end)));
            for _ in i..end {
                out.push_str(if escape { "\\_" } else { "_" });
            }
            i = end;
            continue;
        }
        match c {
            '\\' | '|' | '`' | '*' | '[' | ']' | '<' | '>' | '#' | '~' | '&' | '!' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => out.extend(c.escape_default()),
            c => out.push(c),
        }
        i += 1;
    }
    out
}
