//! What the operator sees: verbosity (`-q`, `-v`), the final `--json` summary, live
//! progress lines on a terminal, and the exit code an error maps to. One place, so that
//! every command prints alike and scripts can rely on stdout and the exit status.

use std::fmt;
use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Mutex, Once};
use std::time::{Duration, Instant};

use anyhow::Result;

use crate::evidence::schema::{ErrorReport, ResultRow, RunReport};

/// Exit statuses, documented in the README and `--help`.
pub mod exit {
    /// Everything asked for was done and every candidate result is clean.
    pub const OK: i32 = 0;
    /// The tool worked and observed something not clean: a KAT MISMATCH or BUILDFAIL,
    /// a failed check, a timing failure, evidence that does not match its index,
    /// figures that are not comparable.
    pub const FINDINGS: i32 = 1;
    /// The command line or a value in it is wrong (nothing was run).
    pub const USAGE: i32 = 2;
    /// The tool, the engine or the machine failed; no candidate status was recorded for it.
    pub const FAILURE: i32 = 3;
    /// Interrupted (Ctrl-C); what was finished is on disk and `--resume` continues.
    pub const INTERRUPTED: i32 = 130;
}

/// A wrong command-line value: exit 2. Checked before any container starts.
#[derive(Debug)]
pub struct Usage(pub String);

/// A candidate verdict or check that did not hold: exit 1.
#[derive(Debug)]
pub struct Findings(pub String);

impl fmt::Display for Usage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl fmt::Display for Findings {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Usage {}
impl std::error::Error for Findings {}

/// `Err(Usage)` as an anyhow error.
pub fn usage<T>(msg: impl Into<String>) -> Result<T> {
    Err(Usage(msg.into()).into())
}

impl Usage {
    /// `e` in the same words, as a wrong value of the operator's (a manifest that does
    /// not check): exit 2.
    pub fn of(e: anyhow::Error) -> anyhow::Error {
        Usage(format!("{e:#}")).into()
    }
}

/// The exit status of a failed command.
pub fn exit_code(e: &anyhow::Error) -> i32 {
    if crate::project::interrupted() {
        exit::INTERRUPTED
    } else if e.chain().any(|c| c.is::<Usage>()) {
        exit::USAGE
    } else if e.chain().any(|c| c.is::<Findings>()) {
        exit::FINDINGS
    } else {
        exit::FAILURE
    }
}

const QUIET: u8 = 0;
const NORMAL: u8 = 1;
const VERBOSE: u8 = 2;

static LEVEL: AtomicU8 = AtomicU8::new(NORMAL);
static JSON: AtomicBool = AtomicBool::new(false);

/// How much to say, and whether stdout carries the JSON summary.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    pub quiet: bool,
    pub verbose: bool,
    pub json: bool,
}

pub fn configure(o: Options) {
    let level = if o.quiet {
        QUIET
    } else if o.verbose {
        VERBOSE
    } else {
        NORMAL
    };
    LEVEL.store(level, Ordering::Relaxed);
    JSON.store(o.json, Ordering::Relaxed);
}

/// `--json`: stdout holds one JSON document; everything said goes to stderr.
pub fn json() -> bool {
    JSON.load(Ordering::Relaxed)
}

pub fn verbose() -> bool {
    LEVEL.load(Ordering::Relaxed) >= VERBOSE
}

fn quiet() -> bool {
    LEVEL.load(Ordering::Relaxed) == QUIET
}

/// A line for the operator (the `say!` macro): stdout, or stderr under `--json`;
/// nothing under `-q`.
pub fn say(args: fmt::Arguments) {
    if !quiet() {
        line(args, json());
    }
}

/// A line only `-v` shows (the `detail!` macro).
pub fn detail(args: fmt::Arguments) {
    if verbose() {
        line(args, true);
    }
}

/// Progress news for the operator (the `note!` macro): stderr, nothing under `-q`.
pub fn note(args: fmt::Arguments) {
    if !quiet() {
        line(args, true);
    }
}

/// A warning (the `warning!` macro): always, on stderr.
pub fn warn(args: fmt::Arguments) {
    line(args, true);
}

fn line(args: fmt::Arguments, to_stderr: bool) {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    live.clear();
    let prefix = PREFIX.with(|p| p.borrow().as_ref().map(|t| format!("[{t}] ")).unwrap_or_default());
    if to_stderr {
        let _ = writeln!(std::io::stderr(), "{prefix}{args}");
    } else {
        let _ = writeln!(std::io::stdout(), "{prefix}{args}");
    }
}

thread_local! {
    /// What every line this thread says starts with (`[kem-01] `): steps of several
    /// submissions that run side by side stay readable.
    static PREFIX: std::cell::RefCell<Option<String>> = const { std::cell::RefCell::new(None) };
}

/// Lines said on this thread start with `[tag] ` until the guard is dropped.
pub fn prefix(tag: &str) -> PrefixGuard {
    let before = PREFIX.with(|p| p.replace(Some(tag.to_owned())));
    PrefixGuard(before)
}

/// The tag of this thread's lines, for the threads it starts.
pub fn tag() -> Option<String> {
    PREFIX.with(|p| p.borrow().clone())
}

/// Puts the thread's earlier prefix back when dropped.
pub struct PrefixGuard(Option<String>);

impl Drop for PrefixGuard {
    fn drop(&mut self) {
        PREFIX.with(|p| *p.borrow_mut() = std::mem::take(&mut self.0));
    }
}

static ROWS: Mutex<Vec<ResultRow>> = Mutex::new(Vec::new());
static EMITTED: AtomicBool = AtomicBool::new(false);

/// A result the run produced or kept, for its `--json` report.
pub fn row(r: ResultRow) {
    ROWS.lock().unwrap_or_else(|p| p.into_inner()).push(r);
}

/// Emit the run report of `command` (the rows gathered so far) when `--json` was given.
pub fn report(command: &str, (system, out): (&str, &camino::Utf8Path), failures: &[String]) -> Result<()> {
    let results = std::mem::take(&mut *ROWS.lock().unwrap_or_else(|p| p.into_inner()));
    let (system, out, command) = (system.to_owned(), out.to_string(), command.to_owned());
    emit(&RunReport { command, system, out, clean: failures.is_empty(), results, failures: failures.to_vec() })
}

/// Under `--json`, a failed command that printed no report prints its error instead,
/// so stdout is always one JSON document.
pub fn emit_error(e: &anyhow::Error) {
    if json() && !EMITTED.load(Ordering::Relaxed) {
        let _ = emit(&ErrorReport { error: format!("{e:#}"), exit_code: exit_code(e) });
    }
}

/// Print the command's summary as JSON on stdout when `--json` was given.
pub fn emit<T: serde::Serialize>(value: &T) -> Result<()> {
    if json() {
        EMITTED.store(true, Ordering::Relaxed);
        let text = serde_json::to_string_pretty(value)?;
        let mut out = std::io::stdout().lock();
        writeln!(out, "{text}")?;
        out.flush()?;
    }
    Ok(())
}

#[macro_export]
macro_rules! say {
    ($($t:tt)*) => { $crate::ui::say(format_args!($($t)*)) };
}

#[macro_export]
macro_rules! detail {
    ($($t:tt)*) => { $crate::ui::detail(format_args!($($t)*)) };
}

#[macro_export]
macro_rules! note {
    ($($t:tt)*) => { $crate::ui::note(format_args!($($t)*)) };
}

#[macro_export]
macro_rules! warning {
    ($($t:tt)*) => { $crate::ui::warn(format_args!($($t)*)) };
}

// ---- live progress lines

/// One running step: what it is, what it is doing now, since when, and how long it
/// should take when that is known from measured work.
struct Step {
    id: u64,
    what: String,
    doing: String,
    started: Instant,
    estimate: Option<Duration>,
}

#[derive(Default)]
struct Live {
    steps: Vec<Step>,
    next_id: u64,
    drawn: bool,
}

static LIVE: Mutex<Live> = Mutex::new(Live { steps: Vec::new(), next_id: 0, drawn: false });
static TICKER: Once = Once::new();

impl Live {
    fn clear(&mut self) {
        if self.drawn {
            let _ = write!(std::io::stderr(), "\r\x1b[2K");
            self.drawn = false;
        }
    }

    fn draw(&mut self) {
        if self.steps.is_empty() {
            self.clear();
            return;
        }
        let text: Vec<String> = self.steps.iter().map(Step::text).collect();
        let mut text = text.join(" > ");
        let width = terminal_width();
        if text.chars().count() > width {
            text = text.chars().take(width.saturating_sub(1)).collect();
        }
        let _ = write!(std::io::stderr(), "\r\x1b[2K{text}");
        let _ = std::io::stderr().flush();
        self.drawn = true;
    }
}

impl Step {
    fn text(&self) -> String {
        let elapsed = self.started.elapsed();
        let mut t = format!("{} {}", self.what, clock(elapsed));
        if let Some(e) = self.estimate {
            match e.checked_sub(elapsed) {
                Some(left) => t.push_str(&format!(" (about {} left)", clock(left))),
                None => t.push_str(&format!(" (over the {} estimate)", clock(e))),
            }
        }
        if !self.doing.is_empty() {
            t.push_str(": ");
            t.push_str(&self.doing);
        }
        t
    }
}

fn terminal_width() -> usize {
    std::env::var("COLUMNS").ok().and_then(|c| c.parse().ok()).unwrap_or(100)
}

/// `4 s`, `2 min 05 s`, `1 h 03 min`.
pub fn clock(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {:02} s", s / 60, s % 60),
        _ => format!("{} h {:02} min", s / 3600, (s % 3600) / 60),
    }
}

/// Whether live lines are drawn: stderr is a terminal, not `-q`.
fn drawing() -> bool {
    !quiet() && std::io::stderr().is_terminal()
}

/// A running step shown on the live line until dropped (nothing when stderr is not a
/// terminal). Steps nest: a campaign step, then the instance verify is on.
pub struct Progress {
    id: u64,
}

/// Start a live line for `what`, with an estimate of its whole duration when known.
pub fn progress(what: impl Into<String>, estimate: Option<Duration>) -> Progress {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    live.next_id += 1;
    let id = live.next_id;
    live.steps.push(Step { id, what: what.into(), doing: String::new(), started: Instant::now(), estimate });
    if drawing() {
        TICKER.call_once(|| {
            std::thread::spawn(|| loop {
                std::thread::sleep(Duration::from_millis(250));
                LIVE.lock().unwrap_or_else(|p| p.into_inner()).draw();
            });
        });
    }
    Progress { id }
}

impl Progress {
    /// What the step is doing now (`ML-KEM-768: KAT run`).
    pub fn set(&self, doing: impl Into<String>) {
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = live.steps.iter_mut().find(|s| s.id == self.id) {
            s.doing = doing.into();
        }
    }

    pub fn elapsed(&self) -> Duration {
        let live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        live.steps.iter().find(|s| s.id == self.id).map_or(Duration::ZERO, |s| s.started.elapsed())
    }
}

/// What the innermost running step is doing now (the step need not be at hand).
pub fn doing(what: impl Into<String>) {
    let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(s) = live.steps.last_mut() {
        s.doing = what.into();
    }
}

/// How long a step named `key` took last time on this machine (an estimate for the
/// live line; kept in the tool's cache, never in evidence).
pub fn last_duration(key: &str) -> Option<Duration> {
    let text = std::fs::read_to_string(duration_file(key)).ok()?;
    text.trim().parse::<f64>().ok().filter(|s| s.is_finite() && *s >= 0.0).map(Duration::from_secs_f64)
}

pub fn remember_duration(key: &str, took: Duration) {
    let path = duration_file(key);
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    let _ = std::fs::write(path, format!("{:.1}\n", took.as_secs_f64()));
}

fn duration_file(key: &str) -> camino::Utf8PathBuf {
    let key: String = key.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    crate::project::cache_dir().join("durations").join(key)
}

impl Drop for Progress {
    fn drop(&mut self) {
        let mut live = LIVE.lock().unwrap_or_else(|p| p.into_inner());
        live.steps.retain(|s| s.id != self.id);
        if live.steps.is_empty() {
            live.clear();
        }
    }
}

/// `--out` is absent or a folder (never a file or a link), before any work starts.
pub fn check_out_dir(out: &camino::Utf8Path) -> Result<()> {
    use anyhow::Context;
    match out.symlink_metadata() {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return usage(format!(
                "--out {out} is not a folder: name a folder (absent, empty, or an earlier evidence set)"
            ))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e).with_context(|| format!("--out {out}: cannot read it")),
    }
    std::fs::create_dir_all(out).with_context(|| format!("--out {out}: cannot create it"))?;
    tempfile::tempfile_in(out).with_context(|| format!("--out {out}: cannot write there"))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_classes_map_to_distinct_exit_codes() {
        let usage = anyhow::Error::new(Usage("no instance X".into())).context("kem-07");
        assert_eq!(exit_code(&usage), exit::USAGE);
        let findings: anyhow::Error = Findings("2 of 3 did not pass".into()).into();
        assert_eq!(exit_code(&findings), exit::FINDINGS);
        assert_eq!(exit_code(&anyhow::anyhow!("podman failed")), exit::FAILURE);
    }

    #[test]
    fn clock_reads_like_a_person_would_write_it() {
        assert_eq!(clock(Duration::from_secs(4)), "4 s");
        assert_eq!(clock(Duration::from_secs(125)), "2 min 05 s");
        assert_eq!(clock(Duration::from_secs(3780)), "1 h 03 min");
    }

    /// A prefix holds on its thread until its guard goes, and the earlier one comes back.
    #[test]
    fn a_line_prefix_is_the_threads_own_and_nests() {
        assert_eq!(tag(), None);
        let outer = prefix("kem-01");
        std::thread::spawn(|| assert_eq!(tag(), None, "another thread has none")).join().unwrap();
        let inner = prefix("sig-02");
        assert_eq!(tag().as_deref(), Some("sig-02"));
        drop(inner);
        assert_eq!(tag().as_deref(), Some("kem-01"));
        drop(outer);
        assert_eq!(tag(), None);
    }
}
