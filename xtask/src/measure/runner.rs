//! The trial runner (`drivers/bench_runner.c`): one container per (instance, operation)
//! whose process 1 runs each trial in a fresh process, kills whatever a trial left
//! behind, and frames the trial's stdout for the host. The host reads the container's
//! cgroup before and after each trial, so every trial keeps its own CPU reading.
//!
//! The runner is built from its one source file in a sandbox of its own (no candidate
//! build sees its folder), and the host keeps the binary's SHA-256 beside it (never
//! mounted writable anywhere) and checks it before each use.

use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use xshell::Shell;

use crate::compile::builder::Build;
use crate::compile::recipe;
use crate::container::engine::Backend;
use crate::container::hostcpu::HostCpu;
use crate::container::sandbox::{Finished, Job, Limits, Mount, Outcome, Sandbox, Session, Stopped};
use crate::lock::KeyLock;
use crate::project;

/// A harness program built from one source file of `drivers/` (and `runner_io.h`), in a
/// sandbox of its own.
#[derive(Debug, Clone, Copy)]
pub struct Tool {
    pub source: &'static str,
    pub program: &'static str,
}

/// The trial runner of `bench`, `profile` and `ct`'s timing test.
pub const RUNNER: Tool = Tool { source: "bench_runner.c", program: "bench_runner" };
/// The header every tool includes (its digest is in the build's key too).
const SHARED: &str = "runner_io.h";
/// Where a tool is mounted in its container.
pub const GUEST: &str = "/runner";
/// The most a trial may print (the runner kills it past this).
const MAX_OUT: usize = 1 << 20;
/// The most of a trial's stderr the runner keeps (it drops the rest).
const MAX_ERR: usize = 64 << 10;

/// A built tool: its host folder (mounted read-only at [`GUEST`]), program and digest.
#[derive(Debug, Clone)]
pub struct RunnerBinary {
    pub dir: Utf8PathBuf,
    pub program: &'static str,
    pub sha256: String,
}

impl RunnerBinary {
    /// The program's path in the container.
    pub fn guest_path(&self) -> String {
        format!("{GUEST}/{}", self.program)
    }
}

fn compile_argv(tool: Tool) -> Vec<String> {
    let words = ["gcc", "-std=gnu11", "-O2", "-Wall", "-Wextra", "-Werror", "-o"];
    let mut argv: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
    argv.push(format!("/out/{}", tool.program));
    argv.push(format!("{}/{}", recipe::DRIVERS, tool.source));
    argv
}

/// The trial runner for this sandbox's image.
pub fn ensure(sh: &Shell, sb: &Sandbox) -> Result<RunnerBinary> {
    ensure_tool(sh, sb, RUNNER)
}

/// `tool` for this sandbox's image: reused while its digest is the one recorded, else
/// built again.
pub fn ensure_tool(sh: &Shell, sb: &Sandbox, tool: Tool) -> Result<RunnerBinary> {
    let source_sha = project::sha256_regular(&project::drivers_dir().join(tool.source))?;
    let shared_sha = project::sha256_regular(&project::drivers_dir().join(SHARED))?;
    let image = sb.image.as_deref().unwrap_or("host");
    let argv = compile_argv(tool).join(" ");
    let key = project::sha256_hex(format!("{image}\n{source_sha}\n{shared_sha}\n{argv}").as_bytes());
    let base = project::cache_dir().join("runner");
    let dir = base.join(&key[..16]);
    std::fs::create_dir_all(&base).with_context(|| format!("cannot create {base}"))?;
    // Two runs on one cache (a verify beside a bench) build it once, not over each other.
    let _lock = KeyLock::exclusive(&base.join(format!("{}.lock", &key[..16])))?;
    if let Some(bin) = reuse(&dir, tool)? {
        return Ok(bin);
    }
    let tmp = base.join(format!("{}.tmp-{}", &key[..16], std::process::id()));
    let _ = std::fs::remove_dir_all(&tmp);
    std::fs::create_dir_all(tmp.join("out")).with_context(|| format!("cannot create {tmp}"))?;
    let job = Job {
        argv: compile_argv(tool),
        workdir: "/out".into(),
        mounts: vec![
            Mount { host: project::drivers_dir(), guest: recipe::DRIVERS, writable: false },
            Mount { host: tmp.join("out"), guest: "/out", writable: true },
        ],
        timeout: Duration::from_mins(5),
        disk: None,
        stdin: None,
        own_init: false,
    };
    let (f, out) = sb.run_captured(sh, &job, 1 << 20)?;
    if !f.outcome.success() {
        bail!("{} does not build ({}):\n{}{}", tool.source, f.outcome, String::from_utf8_lossy(&out), f.stderr);
    }
    // The host's own copy, written by the host: nothing the build sandbox made is kept.
    let bytes = project::read_regular(&tmp.join("out").join(tool.program), 16 << 20)?;
    let _ = std::fs::remove_dir_all(&tmp);
    let sha256 = project::sha256_hex(&bytes);
    let _ = std::fs::remove_dir_all(&dir);
    project::write_atomic(&dir.join("bin").join(tool.program), &bytes)?;
    set_mode(&dir.join("bin").join(tool.program), 0o555)?;
    project::write_atomic(&dir.join("sha256"), sha256.as_bytes())?;
    reuse(&dir, tool)?.with_context(|| format!("{} just built does not match its digest", tool.program))
}

fn set_mode(path: &Utf8Path, mode: u32) -> Result<()> {
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
        .with_context(|| format!("cannot chmod {path}"))
}

fn reuse(dir: &Utf8Path, tool: Tool) -> Result<Option<RunnerBinary>> {
    let (bin, recorded) = (dir.join("bin").join(tool.program), dir.join("sha256"));
    if !project::is_regular(&bin) || !project::is_regular(&recorded) {
        return Ok(None);
    }
    let want = String::from_utf8_lossy(&project::read_regular(&recorded, 64)?).into_owned();
    let sha256 = project::sha256_regular(&bin)?;
    Ok((sha256 == want).then(|| RunnerBinary { dir: dir.join("bin"), program: tool.program, sha256 }))
}

/// One trial as the runner saw it.
#[derive(Debug)]
pub struct TrialRun {
    pub outcome: Outcome,
    pub stdout: Vec<u8>,
    pub stderr: String,
    /// The container's CPU time over this trial, read by the host from its cgroup.
    pub cpu: HostCpu,
    /// The trial process's own user + system time (wait4), from the runner.
    pub rusage_ns: u64,
    /// Processes still there when the trial's process had ended (all killed).
    pub leftovers: u32,
    /// Files and IPC objects it left for the next trial to find.
    pub residue: u32,
    /// Busy time of the container's cores and their siblings over the trial, by every
    /// process on them (`/proc/stat`); None when the container may run anywhere.
    pub cores_busy_ns: Option<u64>,
}

/// A running trial runner.
pub struct Runner {
    session: Session,
    seq: u64,
    salt: String,
}

impl Runner {
    /// Start the runner in a container that sees what `like` (a trial's job) sees.
    pub fn start(sh: &Shell, sb: &Sandbox, bin: &RunnerBinary, like: &Job) -> Result<Runner> {
        let mut mounts = like.mounts.clone();
        mounts.push(Mount { host: bin.dir.clone(), guest: GUEST, writable: false });
        let argv = runner_argv(sb, bin);
        let job = Job {
            argv,
            workdir: like.workdir.clone(),
            mounts,
            timeout: like.timeout,
            disk: None,
            stdin: None,
            own_init: true,
        };
        let mut session = sb.session(sh, &job)?;
        let deadline = Instant::now() + Duration::from_mins(2);
        match session.line(256, deadline)? {
            Ok(line) if line == b"ngcc-runner ready" => {}
            Ok(line) => bail!("the trial runner started with {:?}", String::from_utf8_lossy(&line)),
            Err(stopped) => bail!("the trial runner did not start ({stopped:?}):\n{}", session.take_stderr()),
        }
        Ok(Runner { session, seq: 0, salt: salt()? })
    }

    /// Run `argv` as the next trial. An error is the tool's or the engine's; a frame the
    /// host cannot take is `Ok(Err(why))`, the trial's failure.
    pub fn trial(&mut self, argv: &[String], timeout: Duration) -> Result<std::result::Result<TrialRun, String>> {
        let _ = self.session.take_stderr();
        let (before, busy_before) = (self.session.cpu(), self.session.cores_busy());
        let nonce = self.send(None, argv)?;
        let deadline = Instant::now() + timeout;
        let head = match self.session.line(256, deadline)? {
            Ok(line) => line,
            Err(stopped) => return Ok(Ok(self.stopped(stopped))),
        };
        let Some(frame) = Frame::parse(&head, &nonce) else {
            let text = project::printable(&String::from_utf8_lossy(&head));
            return Ok(Err(format!("the trial runner's stream held no frame of this trial: {text:?}")));
        };
        if let Some(why) = frame.refused {
            return Ok(Err(why.explain(frame.left)));
        }
        let (stdout, err) = match self.session.bytes(frame.len + frame.err_len, deadline)? {
            Ok(mut bytes) => {
                let err = bytes.split_off(frame.len);
                (bytes, err)
            }
            Err(stopped) => return Ok(Ok(self.stopped(stopped))),
        };
        let cpu = match (before, self.session.cpu()) {
            (HostCpu::Ns(a), HostCpu::Ns(b)) => HostCpu::Ns(b.saturating_sub(a)),
            (HostCpu::Unavailable(why), _) | (_, HostCpu::Unavailable(why)) => HostCpu::Unavailable(why),
        };
        let cores_busy_ns = busy_before.zip(self.session.cores_busy()).map(|(a, b)| b.saturating_sub(a));
        // The trial's stderr came in its frame; the container's own (the runner's) is
        // kept after it.
        let stderr = String::from_utf8_lossy(&err).into_owned() + &self.session.take_stderr();
        Ok(Ok(TrialRun {
            outcome: frame.outcome,
            stdout,
            stderr,
            cpu,
            rusage_ns: frame.cpu_us * 1000,
            leftovers: frame.left,
            residue: frame.residue,
            cores_busy_ns,
        }))
    }

    /// Run `argv` as a timed trial of `n` measurements (ct's timing test, the runner's
    /// `--time`): started and given its stdin's line as any other trial, so nothing before
    /// its `main` tells it from a KAT or a timing run. `body_len` reads from the frame's
    /// head, for this nonce, how many bytes follow it.
    pub fn timed<F>(
        &mut self,
        argv: &[String],
        n: u64,
        timeout: Duration,
        frame: impl Fn(&[u8], &str) -> Option<(F, usize)>,
    ) -> Result<Timed<F>> {
        let nonce = self.send(Some(n), argv)?;
        let deadline = Instant::now() + timeout;
        let head = match self.session.line(256, deadline)? {
            Ok(line) => line,
            Err(stopped) => return Ok(Timed::Stopped(stopped, self.session.take_stderr())),
        };
        let Some((frame, len)) = frame(&head, &nonce) else {
            bail!("the trial runner's stream held no timing frame: {:?}", String::from_utf8_lossy(&head));
        };
        Ok(match self.session.bytes(len, deadline)? {
            Ok(body) => Timed::Frame(frame, body),
            Err(stopped) => Timed::Stopped(stopped, self.session.take_stderr()),
        })
    }

    /// Send the next trial's line (`--time <n>` for a timed one); its nonce.
    fn send(&mut self, timed: Option<u64>, argv: &[String]) -> Result<String> {
        if argv.iter().any(|a| a.is_empty() || a.contains([' ', '\n'])) {
            bail!("a trial's arguments must be plain words: {argv:?}");
        }
        self.seq += 1;
        let nonce = format!("{}{:x}", self.salt, self.seq);
        let kind = timed.map(|n| format!("--time {n} ")).unwrap_or_default();
        self.session.send(&format!("{nonce} {kind}{}", argv.join(" ")))?;
        Ok(nonce)
    }

    fn stopped(&mut self, stopped: Stopped) -> TrialRun {
        let outcome = match stopped {
            Stopped::TimedOut => Outcome::TimedOut,
            Stopped::Ended(o) => o,
        };
        let cpu = HostCpu::Unavailable("the runner's container ended".into());
        let stderr = self.session.take_stderr();
        TrialRun { outcome, stdout: vec![], stderr, cpu, rusage_ns: 0, leftovers: 0, residue: 0, cores_busy_ns: None }
    }
}

/// What a timed trial gave: its frame (as its head line read, and the body), or how its
/// container stopped first, with the container's stderr.
#[derive(Debug)]
pub enum Timed<F> {
    Frame(F, Vec<u8>),
    Stopped(Stopped, String),
}

/// Why the runner killed a trial instead of sending it its line (a frame's `refused`
/// value), in words; None for a code the runner never writes.
pub fn refusal(code: i32, others: u32) -> Option<String> {
    Refused::of(code).map(|r| r.explain(others))
}

/// The limits of every sandbox a trial runner runs in: one set for every timed run, so
/// that none can be told from another by what the sandbox allows.
pub fn trial_limits(base: Limits) -> Limits {
    Limits { perf_events: true, ..base }
}

/// What the runner writes first, before any trial's output.
pub const READY: &[u8] = b"ngcc-runner ready\n";

/// The runner's command line in `sb`: qemu-user hides the guest's threads and calls from
/// /proc, so there is no readiness check (`emulated`).
fn runner_argv(sb: &Sandbox, bin: &RunnerBinary) -> Vec<String> {
    let mut argv = vec![bin.guest_path()];
    argv.extend(sb.jit.then(|| "emulated".to_owned()));
    argv
}

/// `argv` of `build` as the one trial of a runner that is its container's process 1
/// (`--exec`): started, and given its stdin's first line, as every trial is, so that
/// nothing before its `main` tells a KAT run or a check from a timing trial; `rest`
/// follows that line on its stdin. The container's stdout is [`READY`] and then the
/// trial's own; its status is the trial's.
pub fn exec_job(build: &Build, sb: &Sandbox, bin: &RunnerBinary, (argv, rest): (&[String], &[u8])) -> Job {
    let mut job = build.run_job(sb.backend, argv, Duration::ZERO);
    let mut request = vec!["exec".to_owned(), "--exec".into()];
    request.extend(job.argv.iter().cloned());
    if let Some(line) = job.stdin.take() {
        request.push("<".into());
        request.extend(String::from_utf8_lossy(&line).split_whitespace().map(str::to_owned));
    }
    let mut stdin = format!("{}\n", request.join(" ")).into_bytes();
    stdin.extend_from_slice(rest);
    job.mounts.push(Mount { host: bin.dir.clone(), guest: GUEST, writable: false });
    Job { argv: runner_argv(sb, bin), stdin: Some(stdin), own_init: true, ..job }
}

/// Run `argv` of `build` (then `rest` on its stdin) in `sb`, its stdout into `out` up to
/// `cap` bytes: with an engine as the one trial of a runner ([`exec_job`]), on the host
/// directly. An error is the tool's or the engine's, a runner that did not start too.
pub fn run_one(
    sh: &Shell,
    (sb, build): (&Sandbox, &Build),
    (argv, rest): (&[String], &[u8]),
    (timeout, cap): (Duration, u64),
    out: &mut (dyn std::io::Write + Send),
) -> Result<Finished> {
    let limits = |cap| Limits { output_cap_bytes: cap, ..sb.limits.clone() };
    if sb.backend == Backend::Host {
        let mut job = build.run_job(sb.backend, argv, timeout);
        job.stdin = Some([job.stdin.take().unwrap_or_default(), rest.to_vec()].concat());
        return Sandbox { limits: limits(cap), ..sb.clone() }.run(sh, &job, out);
    }
    let bin = ensure(sh, sb)?;
    let job = Job { timeout, ..exec_job(build, sb, &bin, (argv, rest)) };
    let mut after = AfterReady::new(out);
    let mut f = Sandbox { limits: limits(cap + READY.len() as u64), ..sb.clone() }.run(sh, &job, &mut after)?;
    if !after.started() {
        bail!("the trial runner did not start ({}):\n{}", f.outcome, project::last_lines(&f.stderr, 6));
    }
    f.stdout_bytes -= READY.len() as u64;
    Ok(f)
}

/// A writer that takes [`READY`] off the front of a stream and passes the rest on.
pub struct AfterReady<W> {
    pub inner: W,
    seen: usize,
}

impl<W: std::io::Write> AfterReady<W> {
    pub fn new(inner: W) -> AfterReady<W> {
        AfterReady { inner, seen: 0 }
    }

    /// Whether the whole line came (a runner that did not start says nothing).
    pub fn started(&self) -> bool {
        self.seen == READY.len()
    }
}

impl<W: std::io::Write> std::io::Write for AfterReady<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let take = (READY.len() - self.seen).min(buf.len());
        if buf[..take] != READY[self.seen..self.seen + take] {
            return Err(std::io::Error::other("the trial runner's stream did not start with its ready line"));
        }
        self.seen += take;
        self.inner.write_all(&buf[take..])?;
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A per-runner random prefix of every nonce, from the host's random source.
fn salt() -> Result<String> {
    Ok(project::hex(&project::random_bytes(12)?))
}

/// Why the runner killed a trial instead of sending it its input (drivers/bench_runner.c,
/// `ready`): what a library could use to learn its run from the input before `main`.
#[derive(Debug, PartialEq, Clone, Copy)]
enum Refused {
    Hidden,
    Crowded,
    Threads,
    Replaced,
    Unblocked,
    Early,
}

impl Refused {
    fn of(code: i32) -> Option<Refused> {
        Some(match code {
            2 => Refused::Hidden,
            3 => Refused::Crowded,
            4 => Refused::Threads,
            5 => Refused::Replaced,
            6 => Refused::Unblocked,
            7 => Refused::Early,
            _ => return None,
        })
    }

    fn explain(self, others: u32) -> String {
        let why = match self {
            Refused::Hidden => "made its state unreadable in /proc (not dumpable), so the runner could not see it \
                                was ready for it"
                .to_owned(),
            Refused::Crowded => format!("had {others} other process(es) about, one of which could take it"),
            Refused::Threads => "had other threads, one of which could take it".to_owned(),
            Refused::Replaced => "read it from a stdin that was no longer the runner's pipe".to_owned(),
            Refused::Unblocked => "could still receive signals, whose handler could take it".to_owned(),
            Refused::Early => "waited for it outside its program's `main` (a library's constructor)".to_owned(),
        };
        format!("was killed before its input was sent: when it waited for it, it {why}")
    }
}

#[derive(Debug, PartialEq)]
struct Frame {
    outcome: Outcome,
    /// Why the runner killed the trial instead of sending its input.
    refused: Option<Refused>,
    cpu_us: u64,
    left: u32,
    residue: u32,
    len: usize,
    err_len: usize,
}

impl Frame {
    /// `ngcc-trial <nonce> <kind> <value> <cpu_us> <leftovers> <residue> <len> <errlen>`,
    /// for this nonce.
    fn parse(line: &[u8], nonce: &str) -> Option<Frame> {
        let text = std::str::from_utf8(line).ok()?;
        let w: Vec<&str> = text.split(' ').collect();
        let [tag, n, kind, value, cpu_us, left, residue, len, err_len] = w[..] else { return None };
        if tag != "ngcc-trial" || n != nonce {
            return None;
        }
        let value: i32 = value.parse().ok()?;
        let outcome = match kind {
            "exited" | "no-exec" | "refused" => Outcome::Exited(value),
            "signalled" => Outcome::Signalled(value),
            "output-cap" => Outcome::OutputLimit,
            _ => return None,
        };
        let len: usize = len.parse().ok().filter(|&l| l <= MAX_OUT)?;
        let err_len: usize = err_len.parse().ok().filter(|&l| l <= MAX_ERR)?;
        let (cpu_us, left, residue) = (cpu_us.parse().ok()?, left.parse().ok()?, residue.parse().ok()?);
        let refused = match kind {
            "refused" => Some(Refused::of(value)?),
            _ => None,
        };
        Some(Frame { outcome, refused, cpu_us, left, residue, len, err_len })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_are_taken_only_for_this_trial() {
        let f = Frame::parse(b"ngcc-trial ab1 exited 0 1200 0 2 31 7", "ab1").unwrap();
        assert_eq!(
            f,
            Frame {
                outcome: Outcome::Exited(0),
                refused: None,
                cpu_us: 1200,
                left: 0,
                residue: 2,
                len: 31,
                err_len: 7
            }
        );
        assert_eq!(Frame::parse(b"ngcc-trial ab1 refused 2 1 0 0 0 0", "ab1").unwrap().refused, Some(Refused::Hidden));
        assert_eq!(Frame::parse(b"ngcc-trial ab1 refused 3 1 4 0 0 0", "ab1").unwrap().refused, Some(Refused::Crowded));
        assert!(Frame::parse(b"ngcc-trial ab1 refused 9 1 4 0 0 0", "ab1").is_none(), "no such reason");
        assert_eq!(
            Frame::parse(b"ngcc-trial ab1 signalled 9 1 2 0 0 0", "ab1").unwrap().outcome,
            Outcome::Signalled(9)
        );
        assert_eq!(
            Frame::parse(b"ngcc-trial ab1 output-cap 0 1 0 0 0 0", "ab1").unwrap().outcome,
            Outcome::OutputLimit
        );
        // Another trial's nonce, a forged kind, an oversize length or stderr, a missing or
        // an extra word: no frame.
        assert!(Frame::parse(b"ngcc-trial ab2 exited 0 1200 0 0 31 0", "ab1").is_none());
        assert!(Frame::parse(b"ngcc-trial ab1 credible 0 1200 0 0 31 0", "ab1").is_none());
        assert!(Frame::parse(b"ngcc-trial ab1 exited 0 1200 0 0 99999999 0", "ab1").is_none());
        assert!(Frame::parse(b"ngcc-trial ab1 exited 0 1200 0 0 31 65537", "ab1").is_none());
        assert!(Frame::parse(b"ngcc-trial ab1 exited 0 1200 0 0 31", "ab1").is_none());
        assert!(Frame::parse(b"ngcc-trial ab1 exited 0 1200 0 0 31 0 x", "ab1").is_none());
        assert!(Frame::parse(b"{\"iterations\":1}", "ab1").is_none());
    }
}
