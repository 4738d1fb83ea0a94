//! `ct`'s timing test, dudect-style: the ct driver in timing mode (`--time <op>`) is the
//! child of `drivers/ct_timer.c`, process 1 of its own container, which picks each
//! measurement's class at random and times the operation's window from outside the
//! operation's process. The statistics are `measure::stats::dudect`'s.
//!
//! What the operation's process still controls is when it answers: a library could
//! answer early and finish its work outside the window. The timer counts threads and
//! processes beyond the driver's own, so work moved to a helper is refused.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::build::builder::Build;
use crate::container::sandbox::{Mount, Sandbox, Stopped};
use crate::evidence::schema::{CtStatus, CtTiming, CtTimingStatus};
use crate::family::{CtOp, CtTimed};
use crate::measure::runner::{self, RunnerBinary, Tool, GUEST};
use crate::measure::stats;
use crate::project;

const TIMER: Tool = Tool { source: "ct_timer.c", program: "ct_timer" };
/// The most of the driver's stdout and stderr the timer keeps.
const MAX_ERR: usize = 64 << 10;
/// The fewest and the most measurements a timing test takes (`--measurements`).
pub const MIN_MEASUREMENTS: u64 = 4 * stats::MIN_PER_CLASS;
pub const MAX_MEASUREMENTS: u64 = 1_000_000;

/// The driver's classes (ct_core.h's `ct_loop`), the same for every family.
pub const CLASSES: &str = "class 0: the same DRNG seed for every measurement (the same keys, inputs and \
randomness); class 1: a random seed each time, so every secret the operation sees is new";
const CLOCK: &str = "CLOCK_MONOTONIC of ct_timer (process 1 of the container, outside the operation's \
process), from its go byte to the driver's done byte: the operation alone, the setup is untimed";

/// Whether `op` gets the timing test after a memcheck run with `status`.
pub fn wanted(op: &CtOp, status: CtStatus) -> bool {
    match op.timed {
        CtTimed::Always => status != CtStatus::Failed,
        CtTimed::OnFindings => status == CtStatus::Findings,
    }
}

/// What one timing run needs.
pub struct Timing<'a> {
    pub sh: &'a xshell::Shell,
    pub sb: &'a Sandbox,
    pub timer: &'a RunnerBinary,
    pub measurements: u64,
    pub timeout: Duration,
}

/// The timer for this sandbox's image (built once, checked by its digest).
pub fn timer(sh: &xshell::Shell, sb: &Sandbox) -> Result<RunnerBinary> {
    runner::ensure_tool(sh, sb, TIMER)
}

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
    }
}

/// Time `op` of `build`'s driver `program`. An error is the tool's or the engine's; what
/// the operation did is in the record.
pub fn run(t: &Timing, build: &Build, program: &str, op: &str) -> Result<CtTiming> {
    if !(MIN_MEASUREMENTS..=MAX_MEASUREMENTS).contains(&t.measurements) {
        bail!("--measurements {}: from {MIN_MEASUREMENTS} to {MAX_MEASUREMENTS}", t.measurements);
    }
    let like = build.run_job(t.sb.backend, &[program.to_owned()], t.timeout);
    let command = vec![like.argv[0].clone(), "--time".into(), op.into()];
    let mut job = like.clone();
    job.mounts.push(Mount { host: t.timer.dir.clone(), guest: GUEST, writable: false });
    job.argv = vec![t.timer.guest_path()];
    let started = Instant::now();
    let mut session = t.sb.session(t.sh, &job)?;
    let deadline = Instant::now() + t.timeout;
    match session.line(256, deadline)? {
        Ok(line) if line == b"ngcc-timer ready" => {}
        Ok(line) => bail!("the timer started with {:?}", String::from_utf8_lossy(&line)),
        Err(stopped) => bail!("the timer did not start ({stopped:?}):\n{}", session.take_stderr()),
    }
    let nonce = project::hex(&project::random_bytes(12)?);
    session.send(&format!("{nonce} {} {}", t.measurements, command.join(" ")))?;
    let frame = match session.line(256, deadline)? {
        Ok(head) => Frame::parse(&head, &nonce, t.measurements)
            .with_context(|| format!("the timer's stream held no frame: {:?}", String::from_utf8_lossy(&head)))?,
        Err(stopped) => return Ok(stopped_record(t, stopped, session.take_stderr())),
    };
    let bytes = match session.bytes(frame.taken as usize * 4 + frame.err_len, deadline)? {
        Ok(b) => b,
        Err(stopped) => return Ok(stopped_record(t, stopped, session.take_stderr())),
    };
    let (raw, printed) = bytes.split_at(frame.taken as usize * 4);
    let mut rec = judge(&frame, &samples(raw), t.measurements, printed);
    rec.timer_sha256 = t.timer.sha256.clone();
    rec.command = command;
    rec.wall_s = started.elapsed().as_secs_f64();
    Ok(rec)
}

fn stopped_record(t: &Timing, stopped: Stopped, stderr: String) -> CtTiming {
    let how = match stopped {
        Stopped::TimedOut => format!("timed out after {} s", t.timeout.as_secs()),
        Stopped::Ended(o) => format!("the timer's container ended ({o})"),
    };
    blank(CtTimingStatus::Failed, Some(format!("{how}: {}", project::last_lines(&stderr, 4))), t.measurements)
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

/// The record of a complete frame.
fn judge(frame: &Frame, samples: &[(usize, f64)], asked: u64, printed: &[u8]) -> CtTiming {
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
    let Some(w) = stats::dudect(samples) else {
        return fail(format!("fewer than {} measurements in a class", stats::MIN_PER_CLASS));
    };
    let status = if w.differs() { CtTimingStatus::Differs } else { CtTimingStatus::NoneFound };
    let mut r = blank(status, None, asked);
    (r.taken, r.t, r.test, r.n, r.mean_ns) = (frame.taken, w.t, w.test, w.n, w.mean_ns);
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
        if !["done", "exited", "signalled", "protocol", "no-exec"].contains(&kind) {
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
        // Too few for any test.
        assert_eq!(judge(&done, &[(0, 1.0), (1, 1.0), (0, 1.0), (1, 1.0)], 4, b"").status, CtTimingStatus::Failed);
        let even: Vec<(usize, f64)> = (0..4000).map(|i| (i % 2, 1000.0 + (i % 7) as f64)).collect();
        let slow: Vec<(usize, f64)> =
            (0..4000).map(|i| (i % 2, 1000.0 + (i % 7) as f64 + 500.0 * (i % 2) as f64)).collect();
        let whole = Frame { taken: 4000, ..done };
        assert_eq!(judge(&whole, &even, 4000, b"").status, CtTimingStatus::NoneFound);
        let r = judge(&whole, &slow, 4000, b"");
        assert_eq!((r.status, r.t < -stats::THRESHOLD), (CtTimingStatus::Differs, true), "{r:?}");
        let helped = Frame { helpers: 1, ..whole };
        assert!(judge(&helped, &slow, 4000, b"").detail.unwrap().contains("helper"));
        let ended = Frame { kind: "exited".into(), value: 2, taken: 10, helpers: 0, err_len: 0 };
        let r = judge(&ended, &even[..10], 4000, b"CRYPTOFAIL: dec returned -1\n");
        assert!(r.detail.unwrap().contains("after 10 of 4000 measurements (exited 2): CRYPTOFAIL"));
        assert_eq!(samples(&[1, 0, 0, 0x80, 7, 0, 0, 0]), [(1, 1.0), (0, 7.0)]);
    }

    #[test]
    fn decapsulation_is_always_timed_and_the_rest_on_findings() {
        let dec = crate::family::KEM.ct.unwrap().ops[2];
        assert!(wanted(&dec, CtStatus::NoneFound) && !wanted(&dec, CtStatus::Failed));
        let keygen = crate::family::KEM.ct.unwrap().ops[0];
        assert!(wanted(&keygen, CtStatus::Findings) && !wanted(&keygen, CtStatus::NoneFound));
    }
}
