//! AddressSanitizer's and UndefinedBehaviorSanitizer's report text as a finding.
//!
//! The text is the stderr excerpt of a run (attacker-controlled: the candidate's code
//! writes the same stream). It is read only when the process ended with the tool's own
//! sanitizer exit code, and a halting sanitizer writes one report before it exits, so
//! the last report in the text is the one taken; any earlier report-like text is counted,
//! never trusted more. Every field is bounded; a report that cannot be read is `None`,
//! which the caller never treats as clean.

use crate::evidence::schema::CtFrame;

/// The most frames kept of a report's stack.
pub const MAX_FRAMES: usize = 16;
/// The longest function name, file or message kept, in characters.
const MAX_FIELD: usize = 200;
/// The most stack lines looked at after a report's first line.
const MAX_SCAN: usize = 400;

/// Where the build sees the candidate's tree and the harness's drivers.
#[derive(Debug, Clone, Copy)]
pub struct Roots<'a> {
    pub src: &'a str,
    pub drivers: &'a str,
}

/// One report as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Report {
    /// `AddressSanitizer` or `UndefinedBehaviorSanitizer`.
    pub sanitizer: &'static str,
    /// ASan's bug type (`stack-buffer-overflow`, `SEGV`), or UBSan's check
    /// (`signed-integer-overflow`, `out-of-bounds-index`).
    pub kind: String,
    /// The report's own words (`WRITE of size 4`, `signed integer overflow: ...`).
    pub what: String,
    /// The first frame in the candidate's tree, else in the drivers, else the first.
    pub at: CtFrame,
    /// The candidate's function the harness called (the innermost frame of the tree
    /// right below the first driver frame), when the stack shows one.
    pub entry: Option<String>,
    /// Innermost first, at most [`MAX_FRAMES`].
    pub stack: Vec<CtFrame>,
}

/// What a run's stderr holds: the last report, and how many report headers the text has.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Read {
    pub report: Option<Report>,
    pub headers: usize,
}

/// Read the last report of `text`.
pub fn parse(text: &str, roots: &Roots) -> Read {
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<(usize, Header)> =
        lines.iter().enumerate().filter_map(|(i, l)| header(l).map(|h| (i, h))).collect();
    let report = starts.last().and_then(|(i, h)| report_at(&lines[i + 1..], h.clone(), roots));
    Read { report, headers: starts.len() }
}

#[derive(Debug, Clone)]
enum Header {
    /// `==PID==ERROR: AddressSanitizer: <bug> on ...`
    Asan { kind: String, rest: String },
    /// `<file>:<line>:<col>: runtime error: <message>`
    Ubsan { file: String, line: u32, message: String },
}

fn header(line: &str) -> Option<Header> {
    let line = line.trim_end();
    if let Some(at) = line.find("==ERROR: AddressSanitizer: ") {
        let pid = &line[..at];
        // `==123` before it: the runtime's own prefix.
        let digits = pid.strip_prefix("==")?;
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let rest = &line[at + "==ERROR: AddressSanitizer: ".len()..];
        let kind = rest.split_whitespace().next()?;
        if !kind.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_') {
            return None;
        }
        return Some(Header::Asan { kind: bounded(kind), rest: bounded(rest) });
    }
    let (place, message) = line.split_once(": runtime error: ")?;
    let (file, line, _col) = file_line(place)?;
    Some(Header::Ubsan { file, line, message: bounded(message) })
}

fn report_at(after: &[&str], header: Header, roots: &Roots) -> Option<Report> {
    let after = &after[..after.len().min(MAX_SCAN)];
    let stack = stack(after, roots);
    match header {
        Header::Asan { kind, rest } => {
            // `WRITE of size 4 at 0x... thread T0`, when the bug is an access.
            let access = after
                .iter()
                .take(3)
                .map(|l| l.trim())
                .find(|l| l.starts_with("READ of size ") || l.starts_with("WRITE of size "))
                .map(|l| l.split(" at ").next().unwrap_or(l).to_owned());
            let what = access.unwrap_or_else(|| rest.split(" (pc ").next().unwrap_or(&rest).to_owned());
            let at = pick(&stack)?.clone();
            Some(Report {
                sanitizer: "AddressSanitizer",
                kind,
                what: bounded(&what),
                entry: entry(&stack),
                at,
                stack: stack.into_iter().take(MAX_FRAMES).collect(),
            })
        }
        Header::Ubsan { file, line, message } => {
            let function = stack.first().map_or_else(String::new, |f| f.function.clone());
            let at = CtFrame { function, file: relative(&file, roots), line };
            Some(Report {
                sanitizer: "UndefinedBehaviorSanitizer",
                kind: ubsan_kind(&message).to_owned(),
                what: message,
                entry: entry(&stack),
                at,
                stack: stack.into_iter().take(MAX_FRAMES).collect(),
            })
        }
    }
}

/// The frame a finding is named by: the first in the candidate's tree, else in the
/// drivers, else the first with a file, else the first.
fn pick(stack: &[CtFrame]) -> Option<&CtFrame> {
    let in_tree = |f: &&CtFrame| f.line > 0 && !f.file.starts_with('/') && !f.file.starts_with("driver:");
    let in_drivers = |f: &&CtFrame| f.line > 0 && f.file.starts_with("driver:");
    stack
        .iter()
        .find(in_tree)
        .or_else(|| stack.iter().find(in_drivers))
        .or_else(|| stack.iter().find(|f| f.line > 0))
        .or_else(|| stack.first())
}

/// The candidate's function right below the first driver frame.
fn entry(stack: &[CtFrame]) -> Option<String> {
    let first_driver = stack.iter().position(|f| f.file.starts_with("driver:"))?;
    let below = stack[..first_driver].iter().rev().find(|f| !f.file.starts_with("driver:"))?;
    (!below.function.is_empty()).then(|| below.function.clone())
}

/// The `    #N 0x... in func file:line[:col]` lines right after a report's first lines.
fn stack(after: &[&str], roots: &Roots) -> Vec<CtFrame> {
    let mut frames = Vec::new();
    let mut seen_frame = false;
    for line in after {
        let t = line.trim_start();
        let Some(rest) = t.strip_prefix('#') else {
            if seen_frame {
                break; // the stack ends at the first line that is not a frame
            }
            continue;
        };
        let Some((n, rest)) = rest.split_once(' ') else { continue };
        if n.is_empty() || !n.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        if n == "0" && seen_frame {
            break; // a second stack (an allocation's, a note's) is not this one
        }
        seen_frame = true;
        if frames.len() < MAX_FRAMES * 4 {
            frames.push(frame(rest, roots));
        }
    }
    frames
}

/// `0x55d0 in main /w/t.c:4:63` or `0x7fbd  (/lib/libc.so.6+0x29ca7) (BuildId: ..)`.
fn frame(rest: &str, roots: &Roots) -> CtFrame {
    let rest = rest.split_once(' ').map_or("", |(_, r)| r).trim_start();
    let (function, place) = match rest.strip_prefix("in ") {
        Some(r) => r.split_once(' ').unwrap_or((r, "")),
        None => ("", rest),
    };
    let place = place.trim();
    match file_line(place) {
        Some((file, line, _)) => CtFrame { function: bounded(function), file: relative(&file, roots), line },
        None => {
            let object = place.trim_start_matches('(').split(['+', ')']).next().unwrap_or("");
            CtFrame { function: bounded(function), file: bounded(object), line: 0 }
        }
    }
}

/// `path:line` or `path:line:col`, with a positive line.
fn file_line(place: &str) -> Option<(String, u32, Option<u32>)> {
    let place = place.split(" (BuildId").next()?.trim();
    if place.is_empty() || place.starts_with('(') || place.contains(' ') {
        return None;
    }
    let mut parts = place.rsplitn(3, ':');
    let last = parts.next()?;
    let mid = parts.next()?;
    let num = |s: &str| s.parse::<u32>().ok().filter(|n| *n > 0);
    match (num(mid), num(last), parts.next()) {
        (Some(line), Some(col), Some(file)) if plain(file) => Some((file.to_owned(), line, Some(col))),
        _ => {
            let (file, line) = place.rsplit_once(':')?;
            plain(file).then_some(())?;
            Some((file.to_owned(), num(line)?, None))
        }
    }
}

/// A file name as the compiler writes one: not empty, no `:` of its own.
fn plain(file: &str) -> bool {
    !file.is_empty() && !file.contains(':')
}

/// A path of the candidate's tree relative to its root, `driver:<file>` for the
/// harness's, any other as it is (bounded).
fn relative(path: &str, roots: &Roots) -> String {
    let under = |root: &str| path.strip_prefix(root).and_then(|r| r.strip_prefix('/'));
    if let Some(r) = under(roots.src) {
        return bounded(r);
    }
    if let Some(r) = under(roots.drivers) {
        return bounded(&format!("driver:{r}"));
    }
    // Build steps run in their own folder: a relative path is the tree's, as compiled.
    bounded(path)
}

/// UBSan's check, from the message's words (the runtime's own wording).
fn ubsan_kind(message: &str) -> &'static str {
    const KINDS: [(&str, &str); 16] = [
        ("signed integer overflow", "signed-integer-overflow"),
        ("out of bounds for type", "out-of-bounds-index"),
        ("shift exponent", "shift"),
        ("left shift of", "shift"),
        ("division by zero", "division-by-zero"),
        ("misaligned address", "misaligned"),
        ("null pointer", "null-pointer"),
        ("with insufficient space", "object-size"),
        ("pointer index expression", "pointer-overflow"),
        ("applying non-zero offset", "pointer-overflow"),
        ("negation of", "signed-integer-overflow"),
        ("is outside the range of representable values", "float-cast-overflow"),
        ("variable length array bound", "vla-bound"),
        ("execution reached", "unreachable"),
        ("not a valid value for type", "invalid-value"),
        ("null argument", "nonnull-attribute"),
    ];
    KINDS.iter().find(|(words, _)| message.contains(words)).map_or("undefined-behavior", |(_, k)| k)
}

fn bounded(s: &str) -> String {
    let s: String = s.chars().filter(|c| !c.is_control()).take(MAX_FIELD).collect();
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOTS: Roots = Roots { src: "/src", drivers: "/drivers" };

    /// GCC 14's ASan report as the pinned image prints it (addresses shortened).
    const ASAN: &str = "\
=================================================================
==14==ERROR: AddressSanitizer: stack-buffer-overflow on address 0x7f2ab1400050 at pc 0x55d0766623ad bp 0x7ffc sp 0x7ffc
WRITE of size 1 at 0x7f2ab1400050 thread T0
    #0 0x7f01 in kem_dec /src/fix-oob/KEM_fix-oob.c:196
    #1 0x7f02 in run_dec /drivers/iccs_kem_kat.c:88
    #2 0x55d3 in ngcc_mode_kat /drivers/iccs_kem_kat.c:140
    #3 0x7f2a  (/lib/x86_64-linux-gnu/libc.so.6+0x29ca7) (BuildId: 93f70d1a8ae34f8e63c223f1500327fbd717f871)

Address 0x7f2ab1400050 is located in stack of thread T0 at offset 80 in frame
    #0 0x7f00 in kem_dec /src/fix-oob/KEM_fix-oob.c:183

SUMMARY: AddressSanitizer: stack-buffer-overflow /src/fix-oob/KEM_fix-oob.c:196 in kem_dec
";

    const UBSAN: &str = "\
fix-int/KEM_fix-int.c:191:23: runtime error: signed integer overflow: 2147483647 + 1 cannot be represented in type 'int'
    #0 0x7f01 in kem_dec /src/fix-int/KEM_fix-int.c:191
    #1 0x7f02 in run_dec /drivers/iccs_kem_kat.c:88
    #2 0x7f2a in __libc_start_main (/lib/x86_64-linux-gnu/libc.so.6+0x29d64) (BuildId: 93f7)
";

    #[test]
    fn an_asan_report_names_the_access_the_line_of_the_tree_and_the_entry() {
        let r = parse(ASAN, &ROOTS);
        assert_eq!(r.headers, 1);
        let rep = r.report.unwrap();
        assert_eq!(
            (rep.sanitizer, rep.kind.as_str(), rep.what.as_str()),
            ("AddressSanitizer", "stack-buffer-overflow", "WRITE of size 1")
        );
        assert_eq!(
            (rep.at.function.as_str(), rep.at.file.as_str(), rep.at.line),
            ("kem_dec", "fix-oob/KEM_fix-oob.c", 196)
        );
        assert_eq!(rep.entry.as_deref(), Some("kem_dec"));
        assert_eq!(rep.stack.len(), 4, "the frame stack of the variable is not the bug's");
        assert_eq!(rep.stack[1].file, "driver:iccs_kem_kat.c");
        assert_eq!((rep.stack[3].file.as_str(), rep.stack[3].line), ("/lib/x86_64-linux-gnu/libc.so.6", 0));
    }

    #[test]
    fn a_ubsan_report_names_its_check_and_its_line() {
        let rep = parse(UBSAN, &ROOTS).report.unwrap();
        assert_eq!((rep.sanitizer, rep.kind.as_str()), ("UndefinedBehaviorSanitizer", "signed-integer-overflow"));
        assert_eq!(
            (rep.at.file.as_str(), rep.at.line, rep.at.function.as_str()),
            ("fix-int/KEM_fix-int.c", 191, "kem_dec")
        );
        assert!(rep.what.starts_with("signed integer overflow: 2147483647 + 1"));
        assert_eq!(rep.entry.as_deref(), Some("kem_dec"));
        // Without a stack (print_stacktrace off, or cut off): still the line, no entry.
        let bare = parse("a.c:7:3: runtime error: index 9 out of bounds for type 'int [4]'\n", &ROOTS);
        let rep = bare.report.unwrap();
        assert_eq!((rep.kind.as_str(), rep.at.line, rep.entry), ("out-of-bounds-index", 7, None));
    }

    #[test]
    fn a_segv_report_without_an_access_line_keeps_its_own_words() {
        let text =
            "==7==ERROR: AddressSanitizer: SEGV on unknown address 0x000000000000 (pc 0x7f01 bp 0x1 sp 0x2 T0)\n\
                    ==7==The signal is caused by a WRITE memory access.\n    #0 0x7f01 in f /src/a.c:3\n";
        let rep = parse(text, &ROOTS).report.unwrap();
        assert_eq!(
            (rep.kind.as_str(), rep.what.as_str(), rep.at.line),
            ("SEGV", "SEGV on unknown address 0x000000000000", 3)
        );
    }

    #[test]
    fn no_report_text_is_no_report_and_never_a_clean_one() {
        for text in ["", "no errors\n", "AddressSanitizer: all clear, 0 errors\n", "SUMMARY: AddressSanitizer: none\n"]
        {
            assert_eq!(parse(text, &ROOTS), Read { report: None, headers: 0 }, "{text:?}");
        }
    }

    #[test]
    fn hostile_text_is_bounded_and_the_last_report_is_the_one_taken() {
        // A candidate's own forged report before the runtime's: counted, not taken.
        let forged = "==1==ERROR: AddressSanitizer: heap-use-after-free on address 0x1\nREAD of size 8 at 0x1 thread T0\n    #0 0x1 in innocent /src/other.c:1\n";
        let r = parse(&format!("{forged}{UBSAN}"), &ROOTS);
        assert_eq!(r.headers, 2);
        assert_eq!(r.report.unwrap().at.line, 191);
        // Fake headers that are not the runtime's form are no headers.
        for fake in [
            "x==ERROR: AddressSanitizer: a b\n",
            "==12a==ERROR: AddressSanitizer: x on\n",
            "==1==ERROR: AddressSanitizer: <script> on\n",
            ":0:1: runtime error: x\n",
            "a.c:0: runtime error: x\n",
        ] {
            assert_eq!(parse(fake, &ROOTS).headers, 0, "{fake:?}");
        }
        // A report with no frame at all cannot be named: no report, the caller's failure.
        assert_eq!(parse("==3==ERROR: AddressSanitizer: stack-overflow on address 0x1\n", &ROOTS).report, None);
        // Huge names and deep stacks are cut.
        let long = "f".repeat(10_000);
        let mut text = String::from("==2==ERROR: AddressSanitizer: heap-buffer-overflow on x\nREAD of size 1 at 0x1\n");
        for i in 0..1000 {
            text.push_str(&format!("    #{i} 0x1 in {long} /src/{long}.c:{}\n", i + 1));
        }
        let rep = parse(&text, &ROOTS).report.unwrap();
        assert_eq!(rep.stack.len(), MAX_FRAMES);
        assert!(rep.at.function.len() <= MAX_FIELD && rep.at.file.len() <= MAX_FIELD);
        // Control characters never reach a record.
        let rep = parse("a\u{1b}[2J.c:4:1: runtime error: x\u{7}y\n", &ROOTS).report.unwrap();
        assert!(!rep.at.file.contains('\u{1b}') && !rep.what.contains('\u{7}'));
    }

    #[test]
    fn paths_are_named_within_the_tree_or_the_drivers() {
        assert_eq!(relative("/src/a/b.c", &ROOTS), "a/b.c");
        assert_eq!(relative("/drivers/kem.c", &ROOTS), "driver:kem.c");
        assert_eq!(relative("/srcx/a.c", &ROOTS), "/srcx/a.c");
        assert_eq!(file_line("/src/a.c:12:5"), Some(("/src/a.c".into(), 12, Some(5))));
        assert_eq!(file_line("/src/a.c:12"), Some(("/src/a.c".into(), 12, None)));
        assert_eq!(file_line("(/lib/libc.so.6+0x29ca7)"), None);
    }
}
