//! `ct`'s timing test, dudect-style: the `ct` mode of the build's one program (the same
//! program, library and sandbox that made the KAT text and the timing figures) runs as a
//! timed trial of the trial runner (`drivers/bench_runner.c`, process 1 of its own
//! container), which picks each measurement's class at random and times the operation's
//! window from outside the operation's process. Nothing the library sees before its
//! program's `main` tells this run from any other. The statistics are
//! `measure::stats::dudect`'s.
//!
//! What the operation's process still controls is when it answers: a library could
//! answer early, or leave work for later, and finish it outside the window. The runner
//! counts threads and processes beyond the trial's own, so work moved to a helper is
//! refused; and it times each gap from a window's end to the next window's start, so
//! work moved after the window, or into the next one, shows as a difference by the
//! class of the window it came from.

use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::compile::builder::Build;
use crate::container::sandbox::{Sandbox, Stopped};
use crate::evidence::schema::{Budget, CtStatus, CtTiming, CtTimingStatus, MovedTest};
use crate::family::{CtOp, CtTimed};
use crate::measure::runner::{self, Runner, RunnerBinary, Timed};
use crate::measure::stats::{self, TimeBudget};
use crate::project;

/// The most of the trial's stderr the runner keeps.
const MAX_ERR: usize = 64 << 10;
/// The fewest and the most measurements a timing test takes (`--measurements`). The
/// fewest is also a budget's floor: after the warm-up share, 1,960 measurements in two
/// classes drawn at random leave each class its `MIN_PER_CLASS` of 500 but for a chance
/// far below one in a billion, and a budget then never gives a verdict on fewer than a
/// fixed count may; from there to `stats::ENOUGH_MEASUREMENTS` the margin rule keeps a
/// |t| between 4.5 and 10 inconclusive.
pub const MIN_MEASUREMENTS: u64 = 4 * stats::MIN_PER_CLASS;
pub const MAX_MEASUREMENTS: u64 = 1_000_000;

/// The driver's classes (ct_core.h's `ct_loop`), the same for every family.
pub const CLASSES: &str = "class 0: the same DRNG seed for every measurement (the same keys, inputs and \
randomness); class 1: a random seed each time, so every secret the operation sees is new";
const CLOCK: &str = "CLOCK_MONOTONIC of the trial runner (process 1 of the container, outside the \
operation's process), from its go byte to the driver's done byte: the operation alone, the setup is \
untimed; and from each done byte to the next ready byte (the gap), tested with the next window by the \
class before";

/// The three tests on one run's measurements, each dudect's: the window by its own class,
/// and, by the class of the window before, the gap after it and the next window.
const AFTER: &str = "the gap after the window, by its class";
const NEXT: &str = "the next window, by the class of the one before";

/// Whether `op` gets the timing test after a memcheck run with `status`.
pub fn wanted(op: &CtOp, status: CtStatus) -> bool {
    match op.timed {
        CtTimed::Always => status != CtStatus::Failed,
        CtTimed::OnFindings => status == CtStatus::Findings,
    }
}

/// What one timing run needs: the toolchain's trial sandbox and its runner.
pub struct Timing<'a> {
    pub sh: &'a xshell::Shell,
    pub sb: &'a Sandbox,
    pub runner: &'a RunnerBinary,
    /// The count without a budget; with one, the most it may allow.
    pub measurements: u64,
    pub timeout: Duration,
    /// The operation's time budget, from which the count follows.
    pub budget: Option<&'a TimeBudget>,
}

/// A budget's first batch: what one measurement costs, by the runner's clock. Small, so
/// that a slow operation (a second a call) spends little of its budget on it.
pub const CALIBRATION: u64 = 32;
pub use stats::OVERRUN;

/// A record that says why no timing was taken.
pub fn not_run(why: &str, measurements: u64) -> CtTiming {
    blank(CtTimingStatus::NotRun, Some(why.to_owned()), measurements)
}

fn blank(status: CtTimingStatus, detail: Option<String>, asked: u64) -> CtTiming {
    CtTiming {
        status,
        detail,
        classes: CLASSES.into(),
        asked,
        taken: 0,
        t: 0.0,
        test: String::new(),
        n: [0, 0],
        mean_ns: [0.0, 0.0],
        threshold: stats::THRESHOLD,
        helpers: 0,
        clock: CLOCK.into(),
        timer_sha256: String::new(),
        command: vec![],
        wall_s: 0.0,
        moved: vec![],
        budget: None,
    }
}

/// Time `op` with `build`'s ct driver `program` (the reference build: the `ct` mode of
/// its one program). An error is the tool's or the engine's; what the operation did is
/// in the record.
pub fn run(t: &Timing, build: &Build, program: &str, op: &str) -> Result<CtTiming> {
    if !(MIN_MEASUREMENTS..=MAX_MEASUREMENTS).contains(&t.measurements) {
        bail!("--measurements {}: from {MIN_MEASUREMENTS} to {MAX_MEASUREMENTS}", t.measurements);
    }
    let argv = [program.to_owned(), "--time".into(), op.into()];
    let like = build.run_job(t.sb.backend, &argv, t.timeout);
    let command = build.command(t.sb.backend, &argv);
    let started = Instant::now();
    let mut runner = Runner::start(t.sh, t.sb, t.runner, &like)?;
    let mut rec = match t.budget {
        None => judged(t, batch(&mut runner, &command, t.measurements, t.timeout)?, t.measurements),
        Some(b) => budgeted(t, (&mut runner, &command), b, started)?,
    };
    rec.timer_sha256 = t.runner.sha256.clone();
    rec.command = command;
    rec.wall_s = started.elapsed().as_secs_f64();
    Ok(rec)
}

/// One timed run of `n` measurements: the frame and its samples, or how it stopped.
enum Batch {
    Taken { frame: Frame, windows: Vec<(usize, f64)>, gaps: Vec<f64>, printed: Vec<u8> },
    Stopped(Stopped, String),
}

fn batch(runner: &mut Runner, command: &[String], n: u64, timeout: Duration) -> Result<Batch> {
    let frame = |head: &[u8], nonce: &str| {
        Frame::parse(head, nonce, n).map(|f| {
            let len = 8 * f.taken as usize + f.err_len;
            (f, len)
        })
    };
    let (frame, bytes) = match runner.timed(command, n, timeout, frame)? {
        Timed::Frame(frame, body) => (frame, body),
        Timed::Stopped(stopped, stderr) => return Ok(Batch::Stopped(stopped, stderr)),
    };
    let words = frame.taken as usize * 4;
    let (raw, rest) = bytes.split_at(words);
    let (gaps, printed) = rest.split_at(words);
    let gaps: Vec<f64> = samples(gaps).into_iter().map(|(_, ns)| ns).collect();
    Ok(Batch::Taken { frame, windows: samples(raw), gaps, printed: printed.to_vec() })
}

/// The record of a batch of `asked` measurements.
fn judged(t: &Timing, batch: Batch, asked: u64) -> CtTiming {
    match batch {
        Batch::Stopped(stopped, stderr) => stopped_record(t, stopped, stderr, asked),
        Batch::Taken { frame, .. } if refused(&frame).is_some() => {
            blank(CtTimingStatus::Failed, refused(&frame), asked)
        }
        Batch::Taken { frame, windows, gaps, printed } => judge(&frame, &windows, &gaps, asked, &printed),
    }
}

/// The count from the budget: a first batch of [`CALIBRATION`] measurements tells what
/// one costs by the runner's clock (its windows and the gaps between them, the
/// candidate's process never reads that clock), and what remains of the budget after
/// it, over that cost, is the count, capped by `--measurements`. Below
/// [`MIN_MEASUREMENTS`], or when the run outlasts its share (a candidate fast in its
/// first batch and slow later), the record is "not enough measurements".
fn budgeted(
    t: &Timing,
    (runner, command): (&mut Runner, &[String]),
    b: &TimeBudget,
    started: Instant,
) -> Result<CtTiming> {
    let first = t.timeout.min(b.per_op);
    let cal = batch(runner, command, CALIBRATION, first)?;
    let unit_ns = match &cal {
        Batch::Taken { frame, windows, gaps, .. } if frame.kind == "done" && refused(frame).is_none() => {
            let sum: f64 = windows.iter().map(|w| w.1).chain(gaps.iter().copied()).sum();
            sum / frame.taken.max(1) as f64
        }
        Batch::Stopped(Stopped::TimedOut, _) if first < t.timeout => {
            let budget = Budget::of(b, f64::INFINITY, (0, 0), MIN_MEASUREMENTS);
            let why =
                format!("a first batch of {CALIBRATION} measurements outlasted the budget of {:.0} s", budget.seconds);
            return Ok(not_enough(budget, why));
        }
        _ => return Ok(judged(t, cal, CALIBRATION)),
    };
    let remaining = b.per_op.saturating_sub(started.elapsed());
    let budget = allowed(b, remaining, unit_ns, t.measurements);
    let n = budget.allowed;
    if !budget.enough {
        let why = format!(
            "the budget of {:.0} s allowed {n} measurements at {} each (the first batch's), fewer than the {} a \
             verdict needs",
            budget.seconds,
            stats::human_time(unit_ns),
            MIN_MEASUREMENTS
        );
        return Ok(not_enough(budget, why));
    }
    let deadline = deadline(remaining, t.timeout);
    let mut rec = match batch(runner, command, n, deadline)? {
        Batch::Stopped(Stopped::TimedOut, _) if deadline < t.timeout => {
            let why = overran(deadline, n, unit_ns);
            return Ok(not_enough(Budget { allowed: 0, enough: false, ..budget }, why));
        }
        main => judged(t, main, n),
    };
    rec.budget = Some(budget);
    Ok(rec)
}

/// What `remaining` of budget `b` allows at `unit_ns` a measurement, at most `cap`.
fn allowed(b: &TimeBudget, remaining: Duration, unit_ns: f64, cap: u64) -> Budget {
    let n = stats::fits(remaining.as_nanos() as f64, unit_ns, cap);
    Budget::of(b, unit_ns, (n, 0), MIN_MEASUREMENTS)
}

/// When a budgeted run is stopped (`stats::overrun` of what remains), never past the
/// operator's timeout.
fn deadline(remaining: Duration, timeout: Duration) -> Duration {
    (remaining * OVERRUN + stats::OVERRUN_SLACK).min(timeout)
}

fn overran(deadline: Duration, n: u64, unit_ns: f64) -> String {
    format!(
        "stopped after {} s: {n} measurements at the first batch's {} each needed {}, and they took more than \
         {OVERRUN}x that; none kept",
        deadline.as_secs(),
        stats::human_time(unit_ns),
        stats::human_time(n as f64 * unit_ns)
    )
}

/// No verdict: what the budget allowed is in the record.
fn not_enough(budget: Budget, why: String) -> CtTiming {
    let mut r = blank(CtTimingStatus::NotEnough, Some(why), budget.allowed);
    r.budget = Some(budget);
    r
}

/// Why the runner killed the trial before its line was sent, if it did.
fn refused(frame: &Frame) -> Option<String> {
    (frame.kind == "refused").then(|| {
        let why = runner::refusal(frame.value, frame.helpers);
        format!("the ct driver {}", why.unwrap_or_else(|| format!("was refused ({})", frame.value)))
    })
}

fn stopped_record(t: &Timing, stopped: Stopped, stderr: String, asked: u64) -> CtTiming {
    let how = match stopped {
        Stopped::TimedOut => format!("timed out after {} s", t.timeout.as_secs()),
        Stopped::Ended(o) => format!("the trial runner's container ended ({o})"),
    };
    blank(CtTimingStatus::Failed, Some(format!("{how}: {}", project::last_lines(&stderr, 4))), asked)
}

/// (class, nanoseconds) of each measurement, in the order taken.
fn samples(raw: &[u8]) -> Vec<(usize, f64)> {
    raw.chunks_exact(4)
        .map(|w| {
            let v = u32::from_le_bytes([w[0], w[1], w[2], w[3]]);
            ((v >> 31) as usize, f64::from(v & 0x7fff_ffff))
        })
        .collect()
}

/// By the class of measurement i: the gap after it, and the window of i + 1.
fn moved(samples: &[(usize, f64)], gaps: &[f64]) -> [Vec<(usize, f64)>; 2] {
    let after = samples.iter().zip(gaps).take(samples.len().saturating_sub(1)).map(|(s, &g)| (s.0, g)).collect();
    let next = samples.windows(2).map(|w| (w[0].0, w[1].1)).collect();
    [after, next]
}

/// The record of a complete frame.
fn judge(frame: &Frame, samples: &[(usize, f64)], gaps: &[f64], asked: u64, printed: &[u8]) -> CtTiming {
    let fail = |why: String| {
        let mut r = blank(CtTimingStatus::Failed, Some(why), asked);
        r.taken = frame.taken;
        r.helpers = frame.helpers;
        r
    };
    if frame.kind != "done" {
        let said = project::last_lines(&String::from_utf8_lossy(printed), 4);
        return fail(format!(
            "the driver stopped after {} of {asked} measurements ({} {}): {said}",
            frame.taken, frame.kind, frame.value
        ));
    }
    if frame.helpers > 0 {
        return fail(format!(
            "the operation's process ran {} helper thread(s) or process(es): its time is not the window's alone",
            frame.helpers
        ));
    }
    if frame.taken < MIN_MEASUREMENTS {
        let why = format!("{} measurements, fewer than the {MIN_MEASUREMENTS} a verdict needs", frame.taken);
        let mut r = blank(CtTimingStatus::NotEnough, Some(why), asked);
        r.taken = frame.taken;
        return r;
    }
    let Some(mut w) = stats::dudect(samples) else {
        return fail(format!("fewer than {} measurements in a class", stats::MIN_PER_CLASS));
    };
    let [after, next] = moved(samples, gaps);
    let others: Vec<(&str, stats::Welch)> =
        [(AFTER, after), (NEXT, next)].into_iter().filter_map(|(what, s)| Some((what, stats::dudect(&s)?))).collect();
    let worst = others
        .iter()
        .filter(|(_, m)| m.rank() > w.rank())
        .max_by(|a, b| a.1.rank().cmp(&b.1.rank()).then(a.1.t.abs().total_cmp(&b.1.t.abs())));
    let mut detail = None;
    if let Some((what, m)) = worst {
        // The window's own test is the record's unless a moved one says more.
        detail = Some(format!(
            "the window alone: {} (|t| = {:.1}); {what}: {} (|t| = {:.1}), where work moved out of the timed \
             window shows",
            w.status().as_str(),
            w.t.abs(),
            m.status().as_str(),
            m.t.abs()
        ));
        w = stats::Welch { test: format!("{what}: {}", m.test), ..m.clone() };
    }
    let mut r = blank(w.status(), detail, asked);
    (r.taken, r.t, r.test, r.n, r.mean_ns) = (frame.taken, w.t, w.test, w.n, w.mean_ns);
    r.moved =
        others.into_iter().map(|(what, m)| MovedTest { what: what.into(), t: m.t, test: m.test, n: m.n }).collect();
    r
}

#[derive(Debug, PartialEq)]
struct Frame {
    kind: String,
    value: i32,
    taken: u64,
    helpers: u32,
    err_len: usize,
}

impl Frame {
    /// `ngcc-timing <nonce> <kind> <value> <taken> <helpers> <errlen>`, for this nonce.
    fn parse(line: &[u8], nonce: &str, asked: u64) -> Option<Frame> {
        let text = std::str::from_utf8(line).ok()?;
        let w: Vec<&str> = text.split(' ').collect();
        let [tag, n, kind, value, taken, helpers, err_len] = w[..] else { return None };
        if tag != "ngcc-timing" || n != nonce {
            return None;
        }
        if !["done", "exited", "signalled", "protocol", "no-exec", "refused"].contains(&kind) {
            return None;
        }
        let taken: u64 = taken.parse().ok().filter(|&t| t <= asked)?;
        let err_len: usize = err_len.parse().ok().filter(|&l| l <= MAX_ERR)?;
        if kind == "done" && taken != asked {
            return None;
        }
        Some(Frame { kind: kind.into(), value: value.parse().ok()?, taken, helpers: helpers.parse().ok()?, err_len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_taken_only_for_this_run_and_within_what_was_asked() {
        let f = Frame::parse(b"ngcc-timing ab done 0 4000 0 12", "ab", 4000).unwrap();
        assert_eq!(f, Frame { kind: "done".into(), value: 0, taken: 4000, helpers: 0, err_len: 12 });
        assert_eq!(Frame::parse(b"ngcc-timing ab signalled 11 17 0 0", "ab", 4000).unwrap().taken, 17);
        for bad in [
            "ngcc-timing ac done 0 4000 0 0", // another run's nonce
            "ngcc-timing ab done 0 3999 0 0", // done, but short
            "ngcc-timing ab done 0 4001 0 0", // more than asked
            "ngcc-timing ab fine 0 4000 0 0", // a forged kind
            "ngcc-timing ab done 0 4000 0 65537",
            "ngcc-timing ab done 0 4000 0",
            "ngcc-timing ab done 0 4000 0 0 x",
        ] {
            assert!(Frame::parse(bad.as_bytes(), "ab", 4000).is_none(), "{bad}");
        }
    }

    #[test]
    fn a_status_needs_a_whole_run_with_no_helpers() {
        let done = Frame { kind: "done".into(), value: 0, taken: 4, helpers: 0, err_len: 0 };
        // Too few for any test: fewer than a verdict needs.
        assert_eq!(
            judge(&done, &[(0, 1.0), (1, 1.0), (0, 1.0), (1, 1.0)], &[0.0; 4], 4, b"").status,
            CtTimingStatus::NotEnough
        );
        let even: Vec<(usize, f64)> = (0..4000).map(|i| (i % 2, 1000.0 + (i % 7) as f64)).collect();
        let slow: Vec<(usize, f64)> =
            (0..4000).map(|i| (i % 2, 1000.0 + (i % 7) as f64 + 500.0 * (i % 2) as f64)).collect();
        let whole = Frame { taken: 4000, ..done };
        let flat = vec![5000.0; 4000];
        assert_eq!(judge(&whole, &even, &flat, 4000, b"").status, CtTimingStatus::NoneFound);
        let r = judge(&whole, &slow, &flat, 4000, b"");
        assert_eq!((r.status, r.t < -stats::THRESHOLD), (CtTimingStatus::Differs, true), "{r:?}");
        let helped = Frame { helpers: 1, ..whole };
        assert!(judge(&helped, &slow, &flat, 4000, b"").detail.unwrap().contains("helper"));
        let ended = Frame { kind: "exited".into(), value: 2, taken: 10, helpers: 0, err_len: 0 };
        let r = judge(&ended, &even[..10], &flat[..10], 4000, b"CRYPTOFAIL: dec returned -1\n");
        assert!(r.detail.unwrap().contains("after 10 of 4000 measurements (exited 2): CRYPTOFAIL"));
        assert_eq!(samples(&[1, 0, 0, 0x80, 7, 0, 0, 0]), [(1, 1.0), (0, 7.0)]);
    }

    /// A leak left for later: the window is even, but the gap after a class-1 window, or
    /// the next window, is slower. The classes are drawn at random, as the timer does.
    #[test]
    fn work_moved_out_of_the_window_is_a_difference_by_the_class_before() {
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let classes: Vec<usize> = (0..4000)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 33) as usize & 1
            })
            .collect();
        let noise = |i: usize| (i * 7919 % 13) as f64;
        let window: Vec<(usize, f64)> = classes.iter().enumerate().map(|(i, &c)| (c, 1000.0 + noise(i))).collect();
        let whole = Frame { kind: "done".into(), value: 0, taken: 4000, helpers: 0, err_len: 0 };
        let even: Vec<f64> = (0..4000).map(|i| 5000.0 + noise(i + 3)).collect();
        let r = judge(&whole, &window, &even, 4000, b"");
        assert_eq!((r.status, r.detail.clone()), (CtTimingStatus::NoneFound, None), "{r:#?}");
        let whats: Vec<&str> = r.moved.iter().map(|m| m.what.as_str()).collect();
        assert_eq!(whats, [AFTER, NEXT]);
        assert!(r.moved.iter().all(|m| m.t.abs() <= stats::THRESHOLD && m.n[0] >= 500), "{:?}", r.moved);
        // Paid in the gap after a class-1 window.
        let after: Vec<f64> = (0..4000).map(|i| 5000.0 + noise(i + 3) + 500.0 * classes[i] as f64).collect();
        let r = judge(&whole, &window, &after, 4000, b"");
        assert_eq!(r.status, CtTimingStatus::Differs, "{r:#?}");
        assert!(r.test.starts_with(AFTER) && r.detail.unwrap().contains("work moved out"), "{}", r.test);
        // Paid in the next window.
        let next: Vec<(usize, f64)> = (0..4000)
            .map(|i| (classes[i], 1000.0 + noise(i) + if i > 0 { 500.0 * classes[i - 1] as f64 } else { 0.0 }))
            .collect();
        let r = judge(&whole, &next, &even, 4000, b"");
        assert_eq!(r.status, CtTimingStatus::Differs, "{r:#?}");
        assert!(r.test.starts_with(NEXT), "{}", r.test);
        // A leak in the window itself is reported as the window's, as before.
        let leak: Vec<(usize, f64)> = window.iter().map(|&(c, ns)| (c, ns + 500.0 * c as f64)).collect();
        let r = judge(&whole, &leak, &after, 4000, b"");
        assert_eq!((r.status, r.detail), (CtTimingStatus::Differs, None));
        assert!(!r.test.starts_with(AFTER) && !r.test.starts_with(NEXT), "{}", r.test);
        // ... and the moved tests are still recorded beside it.
        assert!(r.moved.iter().any(|m| m.what == AFTER && m.t.abs() > stats::THRESHOLD), "{:?}", r.moved);
    }

    /// The rule on counts: a whole run below the floor is no verdict, however large its t.
    #[test]
    fn fewer_measurements_than_the_floor_give_no_verdict() {
        let n = MIN_MEASUREMENTS - 2;
        let shifted: Vec<(usize, f64)> = (0..n).map(|i| ((i % 2) as usize, 1000.0 + 900.0 * (i % 2) as f64)).collect();
        let done = Frame { kind: "done".into(), value: 0, taken: n, helpers: 0, err_len: 0 };
        let r = judge(&done, &shifted, &vec![0.0; n as usize], n, b"");
        assert_eq!((r.status, r.t), (CtTimingStatus::NotEnough, 0.0), "{r:?}");
        // At the floor the same shift is a verdict.
        let n = MIN_MEASUREMENTS;
        let shifted: Vec<(usize, f64)> = (0..n).map(|i| ((i % 2) as usize, 1000.0 + 900.0 * (i % 2) as f64)).collect();
        let r = judge(&Frame { taken: n, ..done }, &shifted, &vec![0.0; n as usize], n, b"");
        assert_eq!(r.status, CtTimingStatus::Differs);
    }

    /// A hostile candidate fast in the first batch and slow afterwards gets a large count
    /// and is stopped at twice its share: "not enough measurements", no verdict. Slow in
    /// the first batch and fast afterwards, it gets a count below the floor: the same.
    #[test]
    fn a_budget_allows_what_fits_and_a_run_past_it_is_not_enough() {
        let b = TimeBudget::given(Duration::from_secs(600));
        let fast = allowed(&b, Duration::from_secs(590), 1e6, MAX_MEASUREMENTS);
        assert_eq!((fast.allowed, fast.enough, fast.floor), (590_000, true, MIN_MEASUREMENTS));
        assert_eq!(allowed(&b, Duration::from_secs(590), 1e6, 20_000).allowed, 20_000, "capped by --measurements");
        // Then each measurement takes 10 ms: 5,900 s of work, stopped at 1,190 s.
        let stop = deadline(Duration::from_secs(590), Duration::from_secs(3600));
        assert_eq!(stop, Duration::from_secs(1190));
        assert!(590_000.0 * 10e-3 > stop.as_secs_f64());
        let rec = not_enough(Budget { allowed: 0, enough: false, ..fast }, overran(stop, 590_000, 1e6));
        assert_eq!((rec.status, rec.taken), (CtTimingStatus::NotEnough, 0));
        assert!(rec.detail.as_deref().unwrap().contains("none kept"), "{:?}", rec.detail);
        // Slow first (0.35 s a measurement, BRQC-512's dec): 1,685 fit, below the floor.
        let slow = allowed(&b, Duration::from_secs(590), 0.35e9, MAX_MEASUREMENTS);
        assert_eq!((slow.allowed, slow.enough), (1685, false));
        // The operator's timeout bounds the deadline; a unit of no time allows nothing.
        assert_eq!(deadline(Duration::from_secs(590), Duration::from_secs(600)), Duration::from_secs(600));
        assert_eq!(allowed(&b, Duration::from_secs(590), 0.0, MAX_MEASUREMENTS).allowed, 0);
    }

    #[test]
    fn decapsulation_is_always_timed_and_the_rest_on_findings() {
        let dec = crate::family::KEM.ct.unwrap().ops[2];
        assert!(wanted(&dec, CtStatus::NoneFound) && !wanted(&dec, CtStatus::Failed));
        let keygen = crate::family::KEM.ct.unwrap().ops[0];
        assert!(wanted(&keygen, CtStatus::Findings) && !wanted(&keygen, CtStatus::NoneFound));
    }
}
