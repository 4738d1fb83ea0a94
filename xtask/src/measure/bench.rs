//! `cargo xtask bench`: time keygen, enc and dec of every instance with the
//! harness's timing driver, one process per trial, and write one record per
//! (instance, operation) that traces every figure to its inputs.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use camino::Utf8Path;
use serde::{Deserialize, Serialize};
use xshell::Shell;

use crate::compile::builder::{Build, BuildCtx, Built, RunCtx};
use crate::compile::options::Inputs;
use crate::compile::recipe;
use crate::compile::sources::Source;
use crate::compile::submission::{Instance, Submission};
use crate::container::engine::Backend;
use crate::container::hostcpu::HostCpu;
use crate::container::sandbox::Sandbox;
use crate::container::systems::SystemProfile;
pub use crate::evidence::schema::CounterKind;
use crate::evidence::schema::{
    self, Calibration, Commands, ContentControl, ContentVerdict, Counter, Credibility, Disagreement, Environment,
    HostCheck, KatRunCheck, LenStats, Memory, PerCall, PlanRecord, Probe, Record, SizeAudit, SizeRecord, SlotTrial,
    StackMark, ToolchainRecord,
};
use crate::evidence::Layout;
use crate::family::{Family, OpId};
use crate::measure::env;
use crate::measure::hostgate::{self, Gate};
use crate::measure::runner::{self, Runner};
use crate::measure::sizes::{self, CatalogRow, Sizes};
use crate::measure::stats::{self, PlanSpec, TimeBudget, Trial};
use crate::{container::emulation, project};
use std::time::Instant;

/// `bench`: time the family's operations of every instance.
#[derive(Debug, Clone)]
pub struct Bench {
    pub inputs: Inputs,
    pub ops: Vec<String>,
    pub trials: Option<u32>,
    pub trial_target: Option<f64>,
    pub iterations: Option<u64>,
    pub cpu: Option<usize>,
    pub allow_unfixed_host: bool,
    pub quick: bool,
    pub no_baselines: bool,
    pub resume: bool,
    /// A campaign's timing core for this bench (`cpu` is its core); None: a bench alone.
    pub slot: Option<TimingSlot>,
    /// A time budget per operation, from which its trials and iterations follow.
    pub budget: Option<TimeBudget>,
}

/// One timing core of a campaign, held by one step: the run's division of the cores and
/// what its steps did, so that each record can say what ran beside its trials.
#[derive(Debug, Clone)]
pub struct TimingSlot {
    pub division: crate::container::cores::Division,
    pub activity: std::sync::Arc<crate::container::cores::Activity>,
    /// This step's span in `activity`.
    pub me: usize,
}

/// What the timing driver prints for one process.
#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct DriverReport {
    pub iterations: u64,
    pub ns: u64,
    pub ticks: u64,
    /// Time of everything the driver spent on operations (setup, check, warm-ups, loop).
    pub accounted_ns: u64,
    pub counter: CounterKind,
    pub counter_nominal_hz: u64,
    /// errno of `perf_event_open` when hardware cycles are unavailable (0 otherwise).
    pub perf_errno: i32,
    pub baseline_rss_kib: i64,
    pub peak_rss_kib: i64,
    pub api_sizes: Sizes,
    pub returned_sizes: Sizes,
    /// Lengths of the family's variable output over the run's calls (signatures).
    #[serde(default)]
    pub out_len: LenStats,
    /// Calls that failed and were retried (signing attempts).
    #[serde(default)]
    pub failed_attempts: u64,
    /// Hash functions: the content control's measurements in the order taken, (class,
    /// nanoseconds of one call); see [`CONTENT_CLASSES`].
    #[serde(default)]
    pub control: Vec<(u8, u64)>,
    /// Wrapped-call counts of the profiling variant (`-DNGCC_PROFILE`), in symbol order.
    #[serde(default)]
    pub profile: Vec<WrappedCount>,
    /// A stack run's high-water mark (the word `stack`), unchecked: see [`stack_use`].
    #[serde(default)]
    pub stack: Option<DriverStack>,
    /// A calls run's samples (the word `calls`), unchecked: see [`per_call_check`].
    #[serde(default)]
    pub calls: Option<DriverCalls>,
    /// The container's CPU time, read by the host; never from the driver's output.
    #[serde(skip)]
    pub host_cpu: Option<HostCpu>,
    /// The busy time of the trial's cores by every process on them, read by the host.
    #[serde(skip)]
    pub cores_busy_ns: Option<u64>,
}

/// One run of the timing program: its command line as records show it, its stdout, and
/// what the host read.
struct Ran {
    line: String,
    out: Vec<u8>,
    cpu: HostCpu,
    cores_busy_ns: Option<u64>,
}

/// What a stack run's driver says (drivers/bench_core.h, `stack_paint`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DriverStack {
    pub painted: u64,
    pub used: u64,
    pub exceeded: bool,
}

/// The most a driver may paint (it paints at most 8 MiB; a larger figure is refused).
pub const STACK_PAINT_MAX: u64 = 8 << 20;
/// The most that may lie between the driver's stack pointer and the painted region (the
/// painting function's own frame: tens of bytes).
pub const STACK_GAP_MAX: u64 = 64 << 10;

/// A stack run's report, bounded: the driver shares its process with the candidate, so a
/// figure that cannot be true is refused; one that can is only ever shown.
pub fn stack_use(report: Option<DriverStack>) -> std::result::Result<DriverStack, String> {
    let s = report.ok_or("no stack figure in the report of a stack run")?;
    if s.painted < 4096 || s.painted > STACK_PAINT_MAX || !s.painted.is_multiple_of(4096) {
        return Err(format!("a painted stack region of {} bytes", s.painted));
    }
    if s.used == 0 || s.used > s.painted + STACK_GAP_MAX {
        return Err(format!("{} bytes of stack used of {} painted", s.used, s.painted));
    }
    if s.exceeded && s.used < s.painted {
        return Err(format!("the whole painted region ({} bytes) written in {} bytes", s.painted, s.used));
    }
    // As much as the region or more: at least that much, whatever the driver says.
    Ok(DriverStack { exceeded: s.exceeded || s.used >= s.painted, ..s })
}

/// What a calls run's driver says (drivers/bench_core.h, `call_begin`).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DriverCalls {
    pub n: u64,
    pub overhead: Vec<u64>,
    pub ticks: Vec<u64>,
}

/// What a calls run's median is held against: the trials' CPU time per operation by
/// the host's reading (`host_ns_per_op`, the median over the kept trials the host read),
/// and the counter's ticks per nanosecond over those trials.
#[derive(Debug, Clone, Copy)]
pub struct CallsReference {
    pub host_ns_per_op: f64,
    pub ticks_per_ns: f64,
}

impl CallsReference {
    /// From the kept trials as (host CPU, timed ns, ticks, accounted ns, iterations); none
    /// when the host read no trial (then the figures are the driver's word, as the
    /// record's credibility says).
    pub fn of(trials: impl Iterator<Item = (Option<u64>, u64, u64, u64, u64)>) -> Option<CallsReference> {
        let (mut per_op, mut ticks, mut ns) = (Vec::new(), 0u64, 0u64);
        for (host, t_ns, t_ticks, accounted, iterations) in trials {
            (ticks, ns) = (ticks.saturating_add(t_ticks), ns.saturating_add(t_ns));
            per_op.extend(host.map(|cpu| host_ns_per_op(cpu, t_ns, accounted, iterations)));
        }
        (!per_op.is_empty() && ns > 0)
            .then(|| CallsReference { host_ns_per_op: stats::median(per_op), ticks_per_ns: ticks as f64 / ns as f64 })
    }
}

/// A run's CPU time per operation by the host's reading: the container's CPU over the
/// run, in the share of its accounted time that its timed loop took. A loaded machine
/// stretches wall time, never CPU time.
pub fn host_ns_per_op(host_cpu_ns: u64, ns: u64, accounted_ns: u64, iterations: u64) -> f64 {
    host_cpu_ns as f64 * (ns as f64 / accounted_ns.max(1) as f64) / iterations.max(1) as f64
}

/// A calls run's figures, or why they are refused. The samples come from inside the
/// candidate's process: there must be as many as asked, they must fit in the run's own
/// window (each call lies inside it), and the empty call must cost less than the
/// median call.
pub fn per_call_check(calls: &DriverCalls, window_ticks: u64) -> std::result::Result<schema::PerCallFigures, String> {
    let n = calls.n as usize;
    if calls.ticks.len() != n || calls.overhead.len() != n {
        return Err(format!("{} calls and {} empty calls for a run of {n}", calls.ticks.len(), calls.overhead.len()));
    }
    let sum = calls.ticks.iter().fold(0u64, |a, &t| a.saturating_add(t));
    if sum > window_ticks {
        return Err(format!("its calls add up to {sum} ticks in a window of {window_ticks}"));
    }
    let f = stats::per_call(&calls.ticks, &calls.overhead).ok_or("no calls")?;
    if f.median == 0 {
        return Err(format!("an empty call of {} ticks, no less than the median call", f.overhead_ticks));
    }
    Ok(f)
}

/// Why a calls run's median is in doubt: more than `PROBE_AGREEMENT` below the trials'
/// CPU time per operation by the host's reading, as samples forged low would be. The two
/// are different runs, so on a loaded machine (another thread on the core's sibling, a
/// different load an instant later) an honest run can be as far off: a doubt is shown
/// beside the figures, not a verdict on the record. A median above is no doubt.
pub fn per_call_doubt(f: &schema::PerCallFigures, reference: Option<CallsReference>) -> Option<String> {
    let r = reference?;
    let median_ns = f.median as f64 / r.ticks_per_ns;
    (median_ns * PROBE_AGREEMENT < r.host_ns_per_op).then(|| {
        format!(
            "the median call, {median_ns:.0} ns, is {:.1}x below the {:.0} ns of CPU per operation the host read in the \
             trials: a different load between the runs, or samples forged low",
            r.host_ns_per_op / median_ns.max(1e-9),
            r.host_ns_per_op
        )
    })
}

#[derive(Debug, Clone, Deserialize, Serialize)]
pub struct WrappedCount {
    pub symbol: String,
    pub calls: u64,
    pub ticks: u64,
}

/// Sum of the `PT_LOAD` memory sizes of an ELF file (a build output: read without
/// following links, and only up to 256 MiB).
pub fn static_image_bytes(path: &Utf8Path) -> Result<u64> {
    use object::read::elf::{ElfFile64, FileHeader, ProgramHeader};
    let data = project::read_regular(path, 256 << 20)?;
    let elf = ElfFile64::<object::Endianness>::parse(&*data).with_context(|| format!("{path} is not a 64-bit ELF"))?;
    let endian = elf.endian();
    let headers = elf.elf_header().program_headers(endian, &*data)?;
    Ok(headers.iter().filter(|h| h.p_type(endian) == object::elf::PT_LOAD).map(|h| h.p_memsz(endian)).sum())
}

pub(crate) struct Ctx<'a> {
    pub family: &'static Family,
    pub sh: &'a Shell,
    pub sb: &'a Sandbox,
    pub build: &'a Build,
    pub cpu: Option<usize>,
    pub timeout: Duration,
}

impl DriverReport {
    /// The driver shares its process with the candidate's code: figures that cannot be
    /// true are refused, not averaged.
    fn check(&self, asked: u64) -> std::result::Result<(), String> {
        const DAY_NS: u64 = 86_400 * 1_000_000_000;
        if self.iterations != asked {
            return Err(format!("{} iterations where {asked} were asked", self.iterations));
        }
        if self.ns == 0 || self.ns > DAY_NS || self.ticks > self.ns.saturating_mul(100) || self.accounted_ns < self.ns {
            return Err(format!(
                "impossible timings ({} ns, {} ticks, {} ns accounted)",
                self.ns, self.ticks, self.accounted_ns
            ));
        }
        if let Some(&(class, _)) = self.control.iter().find(|m| m.0 > 1) {
            return Err(format!("a content-control measurement of class {class}"));
        }
        // The control's calls run between the start and the timed loop.
        let control_ns = self.control.iter().fold(0u64, |a, m| a.saturating_add(m.1));
        if self.ns.saturating_add(control_ns) > self.accounted_ns {
            return Err(format!(
                "content-control calls of {control_ns} ns beside {} ns timed, in {} ns accounted",
                self.ns, self.accounted_ns
            ));
        }
        Ok(())
    }
}

/// The timing driver failed or printed something unexpected: a failure of this
/// operation, not of the tool (engine failures and interruptions stay errors).
#[derive(Debug)]
struct ProgramFailed(String);

impl std::fmt::Display for ProgramFailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ProgramFailed {}

/// The calls run's size: how many calls, their warm-ups, and what the trials say one
/// takes (ticks per operation, the median over the kept trials).
#[derive(Debug, Clone, Copy)]
struct CallsPlan {
    n: u64,
    warmups: u64,
    reference: Option<CallsReference>,
}

struct CallsRun {
    rec: PerCall,
    host: Option<HostRun>,
}

/// A run's failure as the record keeps it: said once, printable, bounded.
fn refusal(op: &OpId, why: &str) -> String {
    let why = project::printable(why);
    crate::warning!("calls run of {}: {why}", op.name());
    why.chars().take(2000).collect()
}

/// The timing driver prints one small JSON object.
const DRIVER_OUTPUT: u64 = 1 << 20;

impl Ctx<'_> {
    /// The timing driver's words for one trial.
    fn argv(&self, op: &OpId, iterations: u64, warmups: u64) -> Vec<String> {
        let program = self.family.bench.program;
        let mut argv = vec![program.into(), op.name().into(), iterations.to_string(), warmups.to_string()];
        argv.extend(self.cpu.map(|c| c.to_string()));
        argv
    }

    /// The runner every trial of one operation goes through: one container for them
    /// all (engines), or none (the host backend starts each trial itself).
    fn runner(&self) -> Result<Option<Runner>> {
        if self.sb.backend == Backend::Host {
            return Ok(None);
        }
        let bin = runner::ensure(self.sh, self.sb)?;
        let like = self.build.run_job(self.sb.backend, &[self.family.bench.program.into()], self.timeout);
        Runner::start(self.sh, self.sb, &bin, &like).map(Some)
    }

    fn run(&self, runner: &mut Option<Runner>, op: &OpId, iterations: u64, warmups: u64) -> Result<DriverReport> {
        self.run_argv(runner, &self.argv(op, iterations, warmups), iterations)
    }

    /// The stack run of one operation: one call, no warm-up, untimed (its figures are
    /// not the record's), the word `stack`. A failure of the run is recorded, not raised.
    fn stack(&self, runner: &mut Option<Runner>, op: &OpId) -> Result<StackMark> {
        let mut argv = self.argv(op, 1, 0);
        argv.push("stack".into());
        let command = self.build.command(self.sb.backend, &argv);
        let mut mark = StackMark { command, used_bytes: None, painted_bytes: None, exceeded: false, failed: None };
        match self.run_argv(runner, &argv, 1).and_then(|r| Ok(stack_use(r.stack).map_err(ProgramFailed)?)) {
            Ok(s) => (mark.used_bytes, mark.painted_bytes, mark.exceeded) = (Some(s.used), Some(s.painted), s.exceeded),
            Err(e) if e.is::<ProgramFailed>() => {
                let why = project::printable(&format!("{e:#}"));
                crate::warning!("stack run of {}: {why}", op.name());
                mark.failed = Some(why.chars().take(2000).collect());
            }
            Err(e) => return Err(e),
        }
        Ok(mark)
    }

    /// The calls run of one operation: `n` calls, each timed alone, after the trials and
    /// outside their figures. Its host reading joins the others (`HostRun`); a failed run
    /// or a refused report is recorded, not raised.
    fn per_call(&self, runner: &mut Option<Runner>, op: &OpId, calls: CallsPlan) -> Result<CallsRun> {
        let mut argv = self.argv(op, calls.n, calls.warmups);
        argv.push("calls".into());
        let command = self.build.command(self.sb.backend, &argv);
        let mut rec =
            PerCall { command, overhead: Vec::new(), ticks: Vec::new(), figures: None, doubt: None, failed: None };
        let report = match self.run_argv(runner, &argv, calls.n) {
            Ok(r) => r,
            Err(e) if e.is::<ProgramFailed>() => {
                rec.failed = Some(refusal(op, &format!("{e:#}")));
                return Ok(CallsRun { rec, host: None });
            }
            Err(e) => return Err(e),
        };
        let host = Some(HostRun::of(&report));
        let Some(samples) = report.calls else {
            rec.failed = Some(refusal(op, "no samples in the report of a calls run"));
            return Ok(CallsRun { rec, host });
        };
        let checked = per_call_check(&samples, report.ticks);
        (rec.overhead, rec.ticks) = (samples.overhead, samples.ticks);
        match checked {
            Ok(f) => {
                rec.doubt = per_call_doubt(&f, calls.reference);
                rec.figures = Some(f);
            }
            Err(why) => rec.failed = Some(refusal(op, &why)),
        }
        Ok(CallsRun { rec, host })
    }

    fn run_argv(&self, runner: &mut Option<Runner>, argv: &[String], iterations: u64) -> Result<DriverReport> {
        let Ran { line, out, cpu, cores_busy_ns } = self.execute(runner, argv)?;
        let report: DriverReport = serde_json::from_slice(&out).map_err(|e| {
            let text = project::printable(&String::from_utf8_lossy(&out[..out.len().min(400)]));
            ProgramFailed(format!("unexpected output of `{line}` ({e}): {text}"))
        })?;
        report.check(iterations).map_err(|why| ProgramFailed(format!("`{line}` reported {why}")))?;
        Ok(DriverReport { host_cpu: Some(cpu), cores_busy_ns, ..report })
    }

    /// The CPU the host reads of the timing program started and ended at once, before
    /// any call of the library (`start`, drivers/bench_core.h): what each trial spends
    /// outside the time its driver accounts, taken as the median of `START_PROBES`.
    fn start_cpu(&self, runner: &mut Option<Runner>) -> Result<Option<u64>> {
        let argv = vec![self.family.bench.program.to_owned(), "start".to_owned()];
        let mut read = Vec::new();
        for _ in 0..START_PROBES {
            let Ran { line, out, cpu, .. } = self.execute(runner, &argv)?;
            if !out.is_empty() {
                return Err(ProgramFailed(format!("`{line}` printed {} bytes where nothing was due", out.len())).into());
            }
            read.extend(cpu.ns().map(|ns| ns as f64));
        }
        Ok((!read.is_empty()).then(|| stats::median(read) as u64))
    }

    /// One run of the timing program with these words (through the runner when there
    /// is one): its command line as records show it, its stdout, and the CPU the host read.
    fn execute(&self, runner: &mut Option<Runner>, argv: &[String]) -> Result<Ran> {
        let job = self.build.run_job(self.sb.backend, argv, self.timeout);
        let command = self.build.command(self.sb.backend, argv);
        let line = command.join(" ");
        let (outcome, stderr, out, cpu, cores_busy_ns) = match runner {
            Some(r) => {
                let t = r.trial(&command, self.timeout)?.map_err(|why| ProgramFailed(format!("`{line}`: {why}")))?;
                if t.leftovers > 0 {
                    let n = t.leftovers;
                    return Err(
                        ProgramFailed(format!("`{line}` left {n} process(es) behind when it ended (killed)")).into()
                    );
                }
                if t.residue > 0 {
                    let (n, places) = (t.residue, "/tmp, /dev/shm, /dev/mqueue or System V IPC");
                    return Err(ProgramFailed(format!("`{line}` left {n} file(s) or IPC object(s) in {places}")).into());
                }
                crate::detail!("  trial: {:.1} ms of CPU (wait4), host {:?}", t.rusage_ns as f64 / 1e6, t.cpu);
                (t.outcome, t.stderr, t.stdout, t.cpu, t.cores_busy_ns)
            }
            None => {
                let (f, out) = self.sb.run_captured(self.sh, &job, DRIVER_OUTPUT)?;
                (f.outcome, f.stderr, out, f.cpu, None)
            }
        };
        if !outcome.success() {
            return Err(ProgramFailed(format!("`{line}` {outcome}:\n{}", stderr.trim_end())).into());
        }
        Ok(Ran { line, out, cpu, cores_busy_ns })
    }
}

impl Bench {
    fn plan_spec(&self) -> PlanSpec {
        let mut spec = if self.quick { PlanSpec::quick() } else { PlanSpec::reference(1.0) };
        if let Some(t) = self.trials {
            spec.trials = t;
        }
        if let Some(t) = self.trial_target {
            spec.trial_target_s = t;
        }
        spec
    }

    pub fn run(self, sh: &Shell) -> Result<()> {
        let profile = SystemProfile::load(&self.inputs.system)?;
        let bench = self.with_profile(&profile)?;
        // Every value is checked (sources, labels, operations) before the host gate and
        // before any container starts.
        let bench = bench.with_baselines(&profile)?;
        let work = bench.inputs.obtain(sh, &profile, |sub| bench.check(sub))?;
        if work.is_empty() {
            // Every selected instance is restricted to other architectures (said above).
            crate::say!("bench: nothing to build on this architecture");
            return Ok(());
        }
        let gate = bench.gate(&profile)?;
        let ctx = bench.inputs.context(sh, profile)?;
        let failures = bench.bench_all(sh, &ctx, &work, &gate)?;
        crate::evidence::reindex(&bench.inputs.out)?;
        crate::ui::report("bench", (&bench.inputs.system, &bench.inputs.out), &failures)?;
        if !failures.is_empty() {
            return Err(crate::ui::Findings(format!(
                "some operations could not be timed:\n  {}",
                failures.join("\n  ")
            ))
            .into());
        }
        Ok(())
    }

    /// These flags with the same-run baselines of the selected submissions' families
    /// added (unless `--no-baselines`), after the submissions themselves.
    pub fn with_baselines(mut self, profile: &SystemProfile) -> Result<Bench> {
        if self.no_baselines {
            return Ok(self);
        }
        let mut ids = profile.ids(&self.inputs.ids);
        for id in ids.clone() {
            let sub = Submission::load(&id)?;
            if let Some(b) = sub.family()?.baseline.filter(|b| !ids.iter().any(|i| i == b)) {
                ids.push(b.to_owned());
            }
        }
        self.inputs.ids = ids;
        Ok(self)
    }

    /// These flags with the profile's defaults where none was given (CPU, trial target);
    /// the CPU must exist.
    pub fn with_profile(mut self, profile: &SystemProfile) -> Result<Bench> {
        self.cpu = self.cpu.or(profile.cpu);
        if let Some(cpu) = self.cpu {
            let n = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
            if !Utf8Path::new(&format!("/sys/devices/system/cpu/cpu{cpu}")).exists() {
                return crate::ui::usage(format!(
                    "--cpu {cpu}: this machine has no CPU {cpu} ({n} available to this process)"
                ));
            }
        }
        if !self.quick {
            self.trial_target = self.trial_target.or(Some(profile.trial_target_s));
        }
        Ok(self)
    }

    /// The host gate, evaluated once per run: refused on an unfixed host unless
    /// overridden (and then marked so).
    pub fn gate(&self, profile: &SystemProfile) -> Result<Gate> {
        self.gate_on(profile, Utf8Path::new("/"))
    }

    /// The gate on the host seen under `root`. It decides alike on every architecture,
    /// emulated or not, and records that failed checks were let through.
    fn gate_on(&self, profile: &SystemProfile, root: &Utf8Path) -> Result<Gate> {
        let arch = profile.arch(self.inputs.target.arch);
        let emulated = !emulation::native(arch);
        let mut gate = hostgate::check(root, self.cpu, arch);
        let failed = gate.failed();
        if !failed.is_empty() {
            let list: Vec<String> = failed.iter().map(|c| format!("  - {}", c.detail)).collect();
            if !self.allow_unfixed_host {
                bail!(
                    "refusing to time on an unfixed host (`cargo xtask doctor` shows the same checks):\n{}\n\
                     Frequency scaling, turbo and other load would move the figures. To time here anyway (a laptop \
                     or a VM: figures indicative only), add --allow-unfixed-host to the same command, e.g. \
                     `cargo xtask bench pqclean-ml-kem --quick --allow-unfixed-host`; every record then carries \
                     these failed checks. To fix the host: the performance governor, turbo off, min = max \
                     frequency, the SMT sibling offline, and --cpu N.",
                    list.join("\n")
                );
            }
            crate::warning!("WARNING: timing on an unfixed host (--allow-unfixed-host):\n{}", list.join("\n"));
            gate.overridden = true;
        }
        if emulated {
            crate::warning!(
                "WARNING: {} runs under qemu-user emulation: records are marked emulated and their timings \
                 are not measurements of that architecture.",
                arch.uname()
            );
        }
        Ok(gate)
    }

    /// Only submissions whose manifest says how to reach their API can be timed, and
    /// only on operations their family has (checked before any container starts).
    pub fn check(&self, sub: &Submission) -> Result<()> {
        if sub.bench.is_none() {
            return crate::ui::usage(format!(
                "{} has no [bench] section: its manifest does not say how to reach its API",
                sub.id
            ));
        }
        sub.family()?.select_ops(&self.ops).with_context(|| sub.id.clone()).map(drop)
    }

    /// Time every submission of `work` in `ctx`; the operations that could not be timed.
    pub fn bench_all(
        &self,
        sh: &Shell,
        ctx: &RunCtx,
        work: &[(Submission, Source)],
        gate: &Gate,
    ) -> Result<Vec<String>> {
        let catalog = sizes::load()?;
        let run_id = project::hex(&project::random_bytes(8)?);
        let start = std::time::Instant::now();
        let (mut failures, mut trials_ns) = (Vec::new(), 0);
        for (sub, src) in work {
            let (f, ns) = self.bench_submission(sh, ctx, (sub, src), gate, (&catalog, &run_id))?;
            failures.extend(f);
            trials_ns += ns;
        }
        crate::say!("{}", overhead_line(start.elapsed(), trials_ns));
        Ok(failures)
    }

    fn bench_submission(
        &self,
        sh: &Shell,
        run: &RunCtx,
        (sub, src): (&Submission, &Source),
        gate: &Gate,
        (catalog, run_id): (&[CatalogRow], &str),
    ) -> Result<(Vec<String>, u64)> {
        // The trials' containers on the timing core, where the host (not the driver) keeps them.
        let env = &crate::compile::builder::BuildEnv {
            cpus: run.env.cpus.clone().or(self.cpu.map(|c| vec![c])),
            ..run.env.clone()
        };
        let sb = env.sandbox(runner::trial_limits(self.inputs.limits()));
        let tc = env.record(sh, &sb)?;
        let bctx = BuildCtx { sh, env, tc: &tc, sb: &sb, sub, src, inputs: &self.inputs };
        let mut environment = env::collect(sh, &run.profile, gate, env.arch, Some(&tc));
        crate::say!("{} ({}): {} on {}, {}", sub.id, sub.name, tc.gcc_version, env.arch.uname(), src.provenance);
        crate::say!(
            "  {:<18} {:<9} {:>14} {:>10} {:>9} {:>12} {:>18}",
            "instance",
            "op",
            "mean ticks",
            "mean time",
            "ops/s",
            "median trial",
            "n (trials × iters)"
        );
        let facts = RunFacts {
            sub,
            src,
            tc: &tc,
            environment: &environment,
            gate,
            catalog,
            harness_commit: project::harness_commit(sh),
            run_id: run_id.to_owned(),
            trials_ns: std::cell::Cell::new(0),
            kept: self.resume.then(|| Kept::of(self, &run.layout)),
        };
        let mut failures = Vec::new();
        // A baseline is timed whole: `--instance` names the candidate's instances.
        let baseline = crate::family::is_baseline(&sub.id);
        let runs_now = |i: &Instance| baseline || self.inputs.selects(i);
        let mut audit: Vec<Disagreement> = Vec::new();
        // Committed before the first record and after each instance, so that an
        // interrupted run leaves a set whose manifest and audit match its records.
        commit_run(&run.layout, sub, &environment, (&audit, &runs_now))?;
        for inst in sub.instances.iter().filter(|i| baseline || self.inputs.selects(i)) {
            if let Some(why) = untimed(inst) {
                crate::say!("{} {}: {why}", sub.id, inst.label);
                continue;
            }
            let build = match bctx.ensure(inst)? {
                Built::Ok(b) => b,
                Built::Failed { log, .. } => {
                    failures.push(format!("{} {}: BUILDFAIL\n{log}", sub.id, inst.label));
                    continue;
                }
            };
            let family = sub.family()?;
            let ctx = Ctx { family, sh, sb: &sb, build: &build, cpu: self.cpu, timeout: Duration::from_hours(1) };
            match self.bench_instance(&ctx, &facts, inst, &run.layout, &mut failures)? {
                // A family whose sizes are all the API's own has no catalog to audit.
                Some(api) if family.sizes.iter().any(|s| s.external) => {
                    audit.extend(sizes::audit(catalog, &sub.id, &inst.label, &api))
                }
                Some(_) => {}
                None => continue,
            }
            commit_run(&run.layout, sub, &environment, (&audit, &runs_now))?;
        }
        let trials_ns = facts.trials_ns.get();
        // Records carry the environment as it was at the start; the manifest of the
        // whole run, with its end, goes next to them.
        environment.campaign_end = Some(project::now_utc());
        commit_run(&run.layout, sub, &environment, (&audit, &runs_now))?;
        if sub.family()?.sizes.iter().any(|s| s.external) {
            print_audit(&audit);
        }
        Ok((failures, trials_ns))
    }

    /// Time every operation of one built instance and write its records; the API
    /// sizes it reported, when any operation was timed.
    fn bench_instance(
        &self,
        ctx: &Ctx,
        facts: &RunFacts,
        inst: &Instance,
        layout: &Layout,
        failures: &mut Vec<String>,
    ) -> Result<Option<Sizes>> {
        let (record, id) = (&ctx.build.record, &facts.sub.id);
        let driver = ctx.family.bench;
        let Some(driver_sha256) = record.program_sha256(driver.program).map(str::to_owned) else {
            let logs: Vec<&str> = record.optional_failures.iter().map(|f| f.log.as_str()).collect();
            failures.push(format!("{id} {}: the timing driver does not build:\n{}", inst.label, logs.join("\n")));
            return Ok(None);
        };
        let built = BuiltFacts {
            inst,
            static_image: static_image_bytes(&ctx.build.out.join(recipe::LIBRARY))?,
            library_sha256: record.output_sha256(recipe::LIBRARY).context("the build record lists no library")?.into(),
            // The whole drivers tree: the driver includes its adapter and the shared core.
            driver_source_sha256: recipe::drivers_digest()?,
            driver_sha256,
        };
        let mut api_sizes = None;
        for op in ctx.family.ops_for(&self.ops, inst.passes)? {
            let path = layout.record(id, &inst.label, op.name());
            if let Some(kept) = facts.kept.as_ref().and_then(|k| k.current(&path, ctx, facts, &built)) {
                print_row(&kept, true);
                api_sizes = Some(kept.sizes.api.clone());
                continue;
            }
            let started = project::now_utc();
            let spec = self.plan_spec();
            // The plan's own length: its trials and about a tenth more for calibration.
            let planned = std::time::Duration::from_secs_f64(spec.trials as f64 * spec.trial_target_s * 1.1 + 1.0);
            let live = crate::ui::progress(format!("bench {id} {} {}", inst.label, op.name()), Some(planned));
            let from = std::time::Instant::now();
            let timed = self.time_op(ctx, &op);
            let core = self.core_use(ctx, from, std::time::Instant::now());
            drop(live);
            let timed = match timed {
                Ok(t) => t,
                Err(e) if e.is::<ProgramFailed>() => {
                    failures.push(format!("{id} {} {}: {e:#}", inst.label, op.name()));
                    continue;
                }
                Err(e) => return Err(e),
            };
            facts.trials_ns.set(facts.trials_ns.get() + timed.run_ns());
            let record = Record { core, ..self.record(ctx, facts, &built, (&op, timed), started) };
            print_row(&record, false);
            api_sizes = Some(record.sizes.api.clone());
            schema::write(&layout.record(id, &inst.label, op.name()), &record)?;
            if record.host_check.credibility == Credibility::NotCredible {
                let why = record.host_check.detail.as_deref().unwrap_or_default();
                failures.push(format!("{id} {} {}: timing not credible: {why}", inst.label, op.name()));
            }
            crate::evidence::update_index(&layout.out)?;
        }
        kat_cross_check(ctx, facts, &built, layout, failures)?;
        Ok(api_sizes)
    }

    /// Calibrate (unless iterations are fixed), plan, run the trials and re-run
    /// disturbed ones a bounded number of times.
    pub(crate) fn time_op(&self, ctx: &Ctx, op: &OpId) -> Result<Timed> {
        let started = Instant::now();
        let spec = self.plan_spec();
        let (mut calibration, mut control) = (Vec::new(), Vec::new());
        let mut checked = Vec::new();
        crate::ui::doing("starting the trial container");
        let runner = &mut ctx.runner()?;
        crate::ui::doing("measuring a trial process's start");
        let allowance = allowance_ns(ctx.start_cpu(runner)?, ctx.sb.jit);
        crate::ui::doing("calibrating");
        // The last calibration run's wall time by the host's clock: what a call costs,
        // start and warm-up included, whatever the driver says of it.
        let mut host_per_op;
        let (plan, estimate) = if let Some(n) = self.iterations {
            let t = Instant::now();
            let r = ctx.run(runner, op, 1, 1)?;
            host_per_op = t.elapsed().as_nanos() as f64 / 2.0;
            checked.push(HostRun::of(&r));
            calibration.push(Calibration { iterations: 1, ns: r.ns });
            control.extend(r.control);
            let est = r.ns as f64;
            (stats::Plan { iterations: n, warmups: stats::plan(&spec, est).warmups }, est)
        } else {
            // One call, then a run of about a tenth of the target: one call alone is noisy.
            let t = Instant::now();
            let first = ctx.run(runner, op, 1, 1)?;
            host_per_op = t.elapsed().as_nanos() as f64 / 2.0;
            checked.push(HostRun::of(&first));
            calibration.push(Calibration { iterations: 1, ns: first.ns });
            control.extend(first.control);
            let mut est = first.ns as f64;
            let n = ((spec.trial_target_s * 1e8) / est.max(1.0)).floor() as u64;
            if n > 1 {
                let n = n.min(spec.max_iterations);
                let t = Instant::now();
                let r = ctx.run(runner, op, n, 1)?;
                host_per_op = t.elapsed().as_nanos() as f64 / (n + 1) as f64;
                checked.push(HostRun::of(&r));
                calibration.push(Calibration { iterations: n, ns: r.ns });
                control.extend(r.control);
                est = r.ns as f64 / n as f64;
            }
            (stats::plan(&spec, est), est)
        };
        let (plan, trials, budget) = self.fit(&spec, plan, started, host_per_op.max(estimate));
        let within = || self.budget.as_ref().is_none_or(|b| started.elapsed() < b.per_op);
        let mut slots: Vec<Vec<(Trial, DriverReport)>> = Vec::new();
        // A library fast in calibration and slow afterwards: no trial starts past the
        // overrun, and the record says what ran.
        let over = || self.budget.as_ref().is_some_and(|b| stats::overrun(b.per_op, started.elapsed()));
        for n in 0..trials {
            if n > 0 && over() {
                crate::warning!("{}: past its budget after {n} of {trials} trials; stopped", op.name());
                break;
            }
            crate::ui::doing(format!("trial {} of {trials}", n + 1));
            slots.push(vec![self.trial(ctx, runner, op, plan)?]);
        }
        let budget = budget.map(|b| b.ran(slots.len() as u64));
        let mut counter_is_cycles = slots[0][0].1.counter == CounterKind::PerfCycles;
        let mut disturbed_total = 0;
        loop {
            let current: Vec<Trial> = slots.iter().map(|s| s.last().unwrap().0.clone()).collect();
            let flags = stats::disturbed(&current, counter_is_cycles);
            let mut rerun = false;
            for (slot, flagged) in slots.iter_mut().zip(flags) {
                if !flagged {
                    continue;
                }
                let last = slot.last_mut().unwrap();
                if !last.0.disturbed {
                    last.0.disturbed = true;
                    disturbed_total += 1;
                }
                if slot.len() <= spec.max_reruns as usize && within() {
                    slot.last_mut().unwrap().0.replaced = true;
                    slot.push(self.trial(ctx, runner, op, plan)?);
                    rerun = true;
                }
            }
            if !rerun {
                break;
            }
            counter_is_cycles = slots.iter().all(|s| s.iter().all(|t| t.1.counter == CounterKind::PerfCycles));
        }
        checked.extend(slots.iter().flatten().map(|(_, r)| HostRun::of(r)));
        let kept: Vec<&DriverReport> = slots.iter().map(|s| &s.last().unwrap().1).collect();
        crate::ui::doing("single calls");
        let reference = CallsReference::of(
            kept.iter()
                .map(|r| (r.host_cpu.as_ref().and_then(HostCpu::ns), r.ns, r.ticks, r.accounted_ns, r.iterations)),
        );
        let calls = CallsPlan { n: calls_within(&spec, estimate, budget.as_ref()), warmups: plan.warmups, reference };
        let calls = ctx.per_call(runner, op, calls)?;
        checked.extend(calls.host.clone());
        let probe = match probe_iterations(&kept, allowance) {
            Some(n) => {
                crate::ui::doing("a longer run for the host's check");
                let r = ctx.run(runner, op, n, plan.warmups)?;
                checked.push(HostRun::of(&r));
                Some(Probe::of(&r))
            }
            None => None,
        };
        let host_check = HostCheck::of(&checked, allowance).with_probe(probe, &kept);
        crate::ui::doing("the stack run");
        let stack = Some(ctx.stack(runner, op)?);
        Ok(Timed {
            budget,
            stack,
            per_call: Some(calls.rec),
            spec,
            plan,
            estimate,
            calibration,
            calibration_control: control,
            slots,
            disturbed_total,
            host_check,
        })
    }

    /// The core the trials ran on, when the host confined them to one (a container on
    /// `--cpu`, or a campaign's timing core), and what ran beside them.
    fn core_use(&self, ctx: &Ctx, from: std::time::Instant, to: std::time::Instant) -> Option<schema::CoreUse> {
        let core = self.cpu.filter(|&c| ctx.sb.backend != Backend::Host && ctx.sb.cpus.as_deref() == Some(&[c]))?;
        let siblings = crate::container::cores::siblings(Utf8Path::new("/"), core);
        Some(match &self.slot {
            Some(s) => schema::CoreUse {
                core,
                siblings,
                timing_cores: s.division.timing.clone(),
                others_on: s.division.others.clone(),
                beside: Some(s.activity.during(s.me, from, to)),
            },
            None => schema::CoreUse { core, siblings, timing_cores: vec![core], others_on: vec![], beside: None },
        })
    }

    /// The plan within the budget, if any: its iterations, the trials to run, and what the
    /// budget allowed (`stats::fit_trials`, on what remains of it after calibration).
    fn fit(
        &self,
        spec: &PlanSpec,
        plan: stats::Plan,
        started: Instant,
        per_op: f64,
    ) -> (stats::Plan, u64, Option<schema::Budget>) {
        let Some(b) = &self.budget else { return (plan, u64::from(spec.trials), None) };
        let remaining = b.per_op.saturating_sub(started.elapsed()).as_nanos() as f64;
        let f = stats::fit_trials(spec, plan, remaining, per_op);
        let plan = stats::Plan { iterations: f.iterations, ..plan };
        let unit = (f.iterations + plan.warmups) as f64 * per_op;
        (plan, f.trials, Some(schema::Budget::of(b, unit, (f.trials, f.iterations), stats::TRIALS_FLOOR)))
    }

    fn trial(
        &self,
        ctx: &Ctx,
        runner: &mut Option<Runner>,
        op: &OpId,
        plan: stats::Plan,
    ) -> Result<(Trial, DriverReport)> {
        let r = ctx.run(runner, op, plan.iterations, plan.warmups)?;
        let t = Trial { iterations: r.iterations, ns: r.ns, ticks: r.ticks, disturbed: false, replaced: false };
        Ok((t, r))
    }

    fn record(
        &self,
        ctx: &Ctx,
        facts: &RunFacts,
        built: &BuiltFacts,
        (op, timed): (&OpId, Timed),
        started: String,
    ) -> Record {
        let (sub, inst, tc, src, catalog) = (facts.sub, built.inst, facts.tc, facts.src, facts.catalog);
        let trials = timed.slot_trials();
        let plain: Vec<Trial> = trials.iter().map(|t| t.trial.clone()).collect();
        let aggregate = stats::aggregate(&plain);
        let memory = Memory { stack: timed.stack.clone(), ..Memory::of(&trials, built.static_image) };
        let first = &timed.slots[0][0].1;
        let emulated = tc.emulated;
        let reports = || timed.slots.iter().flatten().map(|(_, r)| r);
        let out_len = reports().fold(LenStats::default(), |a, r| a.merge(r.out_len));
        let content = ctx.family.message_bytes(op).map(|_| content_control(timed.control()));
        Record {
            schema: schema::version::<Record>(),
            id: sub.id.clone(),
            label: inst.label.clone(),
            op: op.clone(),
            system: self.inputs.system.clone(),
            quick: self.quick,
            emulated,
            timing_comparable: !emulated,
            counter: Counter {
                name: first.counter,
                hardware_cycles: first.counter == CounterKind::PerfCycles,
                measured_hz: aggregate.counter_hz,
                nominal_hz: (first.counter_nominal_hz > 0).then_some(first.counter_nominal_hz),
                cycles_unavailable: why_no_cycles(first.perf_errno),
            },
            plan: PlanRecord {
                spec: timed.spec,
                iterations: timed.plan.iterations,
                warmups: timed.plan.warmups,
                fixed_iterations: self.iterations.is_some(),
                calibration: timed.calibration,
                estimate_ns_per_op: timed.estimate,
            },
            host_check: timed.host_check.clone(),
            reruns: trials.iter().filter(|t| t.trial.replaced).count(),
            disturbed_trials: timed.disturbed_total,
            trials,
            aggregate,
            sizes: SizeRecord {
                api: first.api_sizes.clone(),
                returned: first.returned_sizes.clone(),
                external: sizes::row(catalog, &sub.id, &inst.label).cloned(),
            },
            out_len: (ctx.family.variable_output.is_some() && out_len.count > 0).then_some(out_len),
            failed_attempts: reports().map(|r| r.failed_attempts).sum(),
            run_id: Some(facts.run_id.clone()),
            content,
            memory,
            per_call: timed.per_call.clone(),
            core: None,
            budget: timed.budget.clone(),
            environment: facts.environment.clone(),
            toolchain: tc.clone(),
            sandbox: ctx.sb.limits.clone(),
            host_gate: facts.gate.clone(),
            source: src.provenance.clone(),
            patches: src.patches.clone(),
            build_key: ctx.build.record.key.clone(),
            library_sha256: built.library_sha256.clone(),
            driver_source_sha256: built.driver_source_sha256.clone(),
            driver_sha256: built.driver_sha256.clone(),
            harness_commit: facts.harness_commit.clone(),
            commands: Commands::of(
                ctx,
                tc,
                ctx.build.command(ctx.sb.backend, &ctx.argv(op, timed.plan.iterations, timed.plan.warmups)),
            ),
            started,
            finished: project::now_utc(),
        }
    }
}

impl Commands {
    /// The build steps, the timing driver's compile step and one trial, as run.
    fn of(ctx: &Ctx, tc: &ToolchainRecord, trial: Vec<String>) -> Commands {
        let steps = &ctx.build.record.plan.steps;
        let is_driver = |s: &&recipe::Step| s.output.as_deref() == Some(ctx.family.bench.program);
        Commands {
            engine: tc.engine,
            image: tc.image.clone(),
            build: steps.iter().filter(|s| !is_driver(s)).map(|s| s.argv.clone()).collect(),
            driver: steps.iter().find(is_driver).map(|s| s.argv.clone()).unwrap_or_default(),
            trial,
        }
    }
}

/// Why `perf_event_open` gave no hardware cycles, from its errno (0: it did).
fn why_no_cycles(errno: i32) -> Option<String> {
    match errno {
        0 => None,
        libc::EPERM | libc::EACCES => Some(format!("perf_event_open: permission denied (errno {errno})")),
        libc::ENOENT | libc::EOPNOTSUPP => Some(format!("perf_event_open: no hardware cycle event (errno {errno})")),
        e => Some(format!("perf_event_open failed (errno {e})")),
    }
}

/// The host's bound on what the driver says it spent, per trial: a trial whose CPU,
/// read by the host from the container's cgroup, is more than `CPU_FACTOR` × the
/// driver's accounted time + the allowance is not credible. CPU time of a single thread
/// never exceeds its wall time, which the driver accounts. The allowance is what the
/// trial's process spends outside that time (exec, loading, the library's constructors,
/// the exit, the runner's own work), measured in the same container as the median of
/// `START_PROBES` runs of the program started and ended at once (`start`), half as much
/// again for its spread, and a margin: `MARGIN_NS` natively, `EMULATED_MARGIN_NS` under
/// qemu-user (whose translation of the code a trial runs is partly outside the accounted
/// time). Measured on the fixture KEM (podman, x86-64): a start of 2.0-2.2 ms, honest
/// trials 1.9-3.9 ms over their accounted time. A fixed allowance (100 ms before) let a
/// fast operation's short trial hide a forgery inside it.
pub const CPU_FACTOR: f64 = 1.25;
pub const START_PROBES: usize = 3;
pub const MARGIN_NS: u64 = 3_000_000;
pub const EMULATED_MARGIN_NS: u64 = 100_000_000;
/// The allowance of records made before it was measured (and when the host read no
/// start): the whole start of a container.
pub const LOAD_SLACK_NS: u64 = 100_000_000;

/// What a trial may spend outside its accounted time (see `CPU_FACTOR`).
pub fn allowance_ns(start_cpu: Option<u64>, emulated: bool) -> u64 {
    let margin = if emulated { EMULATED_MARGIN_NS } else { MARGIN_NS };
    start_cpu.map_or(LOAD_SLACK_NS, |s| s + s / 2 + margin)
}

/// One run's self-reported and host-read figures.
#[derive(Debug, Clone)]
pub(crate) struct HostRun {
    accounted_ns: u64,
    host: HostCpu,
}

impl HostRun {
    fn of(r: &DriverReport) -> HostRun {
        let host = r.host_cpu.clone().unwrap_or_else(|| HostCpu::Unavailable("not read".into()));
        HostRun { accounted_ns: r.accounted_ns, host }
    }
}

/// What the content control's classes are (`drivers/hash_bench.c`).
pub const CONTENT_CLASSES: &str = "class 0: the reference content; class 1: content drawn at run time, once \
per run; one call per measurement, its class drawn at random, its message copied into the same buffer first";

/// dudect's tests on the content control's measurements (class, ns) in the order taken;
/// too few in a class is no verdict either way.
pub fn content_control<'a>(control: impl Iterator<Item = &'a (u8, u64)>) -> ContentControl {
    let samples: Vec<(usize, f64)> = control.map(|&(c, ns)| (usize::from(c.min(1)), ns as f64)).collect();
    let mut taken = [0u64; 2];
    samples.iter().for_each(|&(c, _)| taken[c] += 1);
    let welch = stats::dudect(&samples);
    let verdict = match &welch {
        None => ContentVerdict::TooFewMeasurements,
        Some(w) if w.differs() => ContentVerdict::Depends,
        Some(_) => ContentVerdict::NoneFound,
    };
    let ratio = welch.as_ref().map(|w| w.mean_ns[1] / w.mean_ns[0]).filter(|r| r.is_finite());
    ContentControl {
        verdict,
        classes: CONTENT_CLASSES.into(),
        taken,
        min_per_class: stats::MIN_PER_CLASS,
        threshold: stats::THRESHOLD,
        welch,
        ratio,
    }
}

/// A trial shorter than `PROBE_FACTOR` × the allowance is checked only loosely by the
/// bound; the reference plan's cap of 20,000 iterations keeps a fast operation's trials
/// that short. Then one run of that many allowances, outside the figures, is checked by
/// the bound, and the trials' time per operation may not be below its by more than
/// `PROBE_AGREEMENT`: a forgery kept to short runs disagrees with it, one in every run
/// is over the bound in it.
pub const PROBE_FACTOR: u64 = 10;
pub const PROBE_AGREEMENT: f64 = 2.0;

/// Iterations of the longer run, or None when the trials are long enough themselves.
fn probe_iterations(kept: &[&DriverReport], allowance_ns: u64) -> Option<u64> {
    let want = PROBE_FACTOR * allowance_ns;
    if kept.is_empty() || stats::median(kept.iter().map(|r| r.accounted_ns as f64).collect()) >= want as f64 {
        return None;
    }
    let per_op = median_per_op(kept).max(1.0);
    let most = kept.iter().map(|r| r.iterations).max().unwrap_or(1).saturating_mul(1000);
    Some(((want as f64 / per_op).ceil() as u64).clamp(1, most))
}

/// The median of the reports' time per operation, in ns.
fn median_per_op(reports: &[&DriverReport]) -> f64 {
    stats::median(reports.iter().map(|r| r.ns as f64 / r.iterations.max(1) as f64).collect())
}

impl Probe {
    fn of(r: &DriverReport) -> Probe {
        Probe {
            iterations: r.iterations,
            ns: r.ns,
            accounted_ns: r.accounted_ns,
            host_cpu_ns: r.host_cpu.as_ref().and_then(HostCpu::ns),
        }
    }
}

/// A KAT run needs its records' calls and the start of its container; one whose CPU is
/// more than `KAT_FACTOR` × what the timed figures say its calls need + `KAT_START_NS`
/// holds the figures not credible: a library slow where its KAT text is made and fast
/// where it is timed. The factor covers single cold calls against warm means and the
/// KAT program's printing; the start, the container's (33-37 ms of CPU for `/bin/true`).
pub const KAT_FACTOR: f64 = 10.0;
pub const KAT_START_NS: u64 = 100_000_000;

/// Whether a KAT run's CPU is within what the timed figures allow.
pub fn kat_credible(kat_cpu_ns: u64, predicted_ns: u64) -> bool {
    kat_cpu_ns as f64 <= KAT_FACTOR * predicted_ns as f64 + KAT_START_NS as f64
}

/// The KAT run of this library (the same set's verify summary), if there is one and the
/// family says which operations each record calls, held against this instance's records
/// of those operations; every one of them carries the check.
fn kat_cross_check(
    ctx: &Ctx,
    facts: &RunFacts,
    built: &BuiltFacts,
    layout: &Layout,
    failures: &mut Vec<String>,
) -> Result<()> {
    let (id, label) = (&facts.sub.id, &built.inst.label);
    // Under qemu-user a KAT run's CPU is the emulator's start and translation as much as
    // the library's: nothing to hold the figures against.
    if ctx.family.kat_calls.is_empty() || ctx.sb.jit {
        return Ok(());
    }
    let Some(summary) = schema::read::<schema::Summary>(&layout.kat_summary(id))? else { return Ok(()) };
    let same =
        |r: &&schema::InstanceResult| r.label == *label && r.library_sha256.as_deref() == Some(&built.library_sha256);
    let Some(kat_cpu_ns) = summary.instances.iter().find(same).and_then(|r| r.kat_cpu_ns) else { return Ok(()) };
    let mut records = Vec::new();
    for op in ctx.family.kat_calls {
        let path = layout.record(id, label, op);
        match schema::read::<Record>(&path)? {
            Some(r) => records.push((path, r)),
            None => return Ok(()), // not every call timed: nothing to hold it against
        }
    }
    let n = u64::from(built.inst.kat_records);
    let predicted_ns = (n as f64 * records.iter().map(|(_, r)| r.aggregate.mean_ns).sum::<f64>()) as u64;
    let check = KatRunCheck { kat_cpu_ns, records: n, predicted_ns, credible: kat_credible(kat_cpu_ns, predicted_ns) };
    let why = format!(
        "the KAT run of this library took {:.1} ms of CPU for {n} records, the timed figures say its calls need {:.3} ms",
        kat_cpu_ns as f64 / 1e6,
        predicted_ns as f64 / 1e6
    );
    for (path, mut r) in records {
        if !check.credible {
            failures.push(format!("{id} {label} {}: timing not credible: {why}", r.op.name()));
            if r.host_check.credibility != Credibility::NotCredible || r.host_check.kat_run.is_none() {
                r.host_check.credibility = Credibility::NotCredible;
                r.host_check.detail = Some(r.host_check.detail.map_or(why.clone(), |d| format!("{d}; {why}")));
            }
        }
        if r.host_check.kat_run.as_ref() != Some(&check) {
            if r.host_check.kat_run.is_none() {
                r.host_check.rule += &format!(
                    "; the KAT run of the same library: its CPU <= {KAT_FACTOR} x records x the means of the \
                     operations a record calls + {} ms",
                    KAT_START_NS / 1_000_000
                );
            }
            r.host_check.kat_run = Some(check.clone());
            schema::write(&path, &r)?;
        }
    }
    crate::evidence::update_index(&layout.out).map(drop)
}

/// Whether the host's reading is within the bound of the driver's accounted time.
pub fn credible(accounted_ns: u64, host_cpu_ns: u64, allowance_ns: u64) -> bool {
    host_cpu_ns as f64 <= CPU_FACTOR * accounted_ns as f64 + allowance_ns as f64
}

impl HostCheck {
    /// Not credible when any run is past the bound; self-reported (unchecked) when the
    /// host could not read some run; checked otherwise.
    pub(crate) fn of(runs: &[HostRun], allowance_ns: u64) -> HostCheck {
        let rule = format!(
            "container CPU time from its cgroup, read by the host, <= {CPU_FACTOR} x the driver's accounted \
             time + {:.1} ms (a trial process's start, measured, and its margin), for every run",
            allowance_ns as f64 / 1e6
        );
        let ms = |ns: u64| format!("{:.1} ms", ns as f64 / 1e6);
        let mut over = Vec::new();
        let mut unread = None;
        for (i, r) in runs.iter().enumerate() {
            match &r.host {
                HostCpu::Ns(cpu) if !credible(r.accounted_ns, *cpu, allowance_ns) => {
                    over.push(format!("run {}: host CPU {} for {} accounted", i + 1, ms(*cpu), ms(r.accounted_ns)));
                }
                HostCpu::Ns(_) => {}
                HostCpu::Unavailable(why) => unread = unread.or(Some(why.clone())),
            }
        }
        let (credibility, detail) = if !over.is_empty() {
            (
                Credibility::NotCredible,
                Some(format!("{} of {} runs over the bound: {}", over.len(), runs.len(), over.join("; "))),
            )
        } else if let Some(why) = unread {
            (Credibility::SelfReported, Some(format!("unchecked: the host could not read the CPU time ({why})")))
        } else {
            (Credibility::Checked, None)
        };
        HostCheck { credibility, rule, detail, allowance_ns: Some(allowance_ns), probe: None, kat_run: None }
    }

    /// With the longer run (if one was needed): the trials' time per operation may not be
    /// below its by more than `PROBE_AGREEMENT`. The run's is the CPU the host read, in
    /// the share of its accounted time that its timed loop took, per operation (its own
    /// word where the host read none): a loaded machine stretches a run's wall time,
    /// never its CPU time, and the share leaves out its setup and untimed preparation.
    fn with_probe(mut self, probe: Option<Probe>, kept: &[&DriverReport]) -> HostCheck {
        let Some(p) = probe else { return self };
        let longer = p.host_cpu_ns.map_or(p.ns as f64 / p.iterations.max(1) as f64, |cpu| {
            host_ns_per_op(cpu, p.ns, p.accounted_ns, p.iterations)
        });
        let trials = median_per_op(kept);
        if trials * PROBE_AGREEMENT < longer {
            let why = format!(
                "the trials report {trials:.1} ns per operation, a run of {} iterations {longer:.1} ns",
                p.iterations
            );
            self = self.refuted(&why);
        }
        self.rule += &format!(
            "; trials shorter than {PROBE_FACTOR} x that allowance: one run that long, whose time per operation \
             the trials' may not be below by more than {PROBE_AGREEMENT}x"
        );
        self.probe = Some(p);
        self
    }

    /// Not credible, for this reason beside any other.
    fn refuted(mut self, why: &str) -> HostCheck {
        self.detail = Some(self.detail.map_or(why.to_owned(), |d| format!("{d}; {why}")));
        self.credibility = Credibility::NotCredible;
        self
    }

    /// The less trustworthy of two checks (a profile times two builds).
    pub fn worse(self, other: HostCheck) -> HostCheck {
        let rank = |c: Credibility| match c {
            Credibility::Checked => 0,
            Credibility::SelfReported => 1,
            Credibility::NotCredible => 2,
        };
        if rank(other.credibility) > rank(self.credibility) {
            other
        } else {
            self
        }
    }
}

/// What every record of one submission's run shares.
struct RunFacts<'a> {
    sub: &'a Submission,
    src: &'a Source,
    tc: &'a ToolchainRecord,
    environment: &'a Environment,
    gate: &'a Gate,
    catalog: &'a [CatalogRow],
    harness_commit: String,
    run_id: String,
    /// What the timing runs of the records so far took (`Timed::run_ns`).
    trials_ns: std::cell::Cell<u64>,
    /// Under `--resume`: the records on disk that may be kept.
    kept: Option<Kept<'a>>,
}

/// The records of an earlier run that `--resume` may keep: those the evidence index
/// vouches for (same bytes as indexed, the index itself intact).
struct Kept<'a> {
    bench: &'a Bench,
    layout: &'a Layout,
    /// Paths (relative to the evidence root) whose bytes are those of the index.
    vouched: std::collections::BTreeSet<String>,
}

impl<'a> Kept<'a> {
    fn of(bench: &'a Bench, layout: &'a Layout) -> Kept<'a> {
        let root = &layout.out;
        let vouched = match (crate::evidence::check(root), crate::evidence::read_index(root)) {
            (Ok(p), Ok(index)) if p.index.is_none() => {
                let bad: std::collections::BTreeSet<&String> =
                    p.changed.iter().chain(&p.missing).chain(&p.schema).chain(&p.refused).collect();
                index.into_keys().filter(|k| !bad.contains(k)).collect()
            }
            _ => Default::default(),
        };
        Kept { bench, layout, vouched }
    }

    /// The record at `path` when it is current for this run: indexed and unchanged, of
    /// today's schema, the same build, library, drivers, toolchain, harness commit,
    /// plan, sandbox, host gate and system, quick or not alike, and credible.
    fn current(&self, path: &Utf8Path, ctx: &Ctx, facts: &RunFacts, built: &BuiltFacts) -> Option<Record> {
        if !project::is_regular(path) {
            return None;
        }
        let rel = self.layout.relative(path);
        if !self.vouched.contains(&rel) {
            crate::warning!("{rel}: not as the evidence index has it; timed again");
            return None;
        }
        let r: Record = schema::read(path).ok().flatten()?;
        if let Err(e) = check_figures(&r) {
            crate::warning!("WARNING: {rel}: earlier record dropped, {e:#}; timed again");
            return None;
        }
        let b = self.bench;
        let spec = |s: &PlanSpec| serde_json::to_string(s).ok();
        let same = r.build_key == ctx.build.record.key
            && r.library_sha256 == built.library_sha256
            && r.driver_source_sha256 == built.driver_source_sha256
            && r.driver_sha256 == built.driver_sha256
            && r.harness_commit == facts.harness_commit
            && r.toolchain == *facts.tc
            && spec(&r.plan.spec) == spec(&b.plan_spec())
            && r.plan.fixed_iterations == b.iterations.is_some()
            && b.iterations.is_none_or(|n| n == r.plan.iterations)
            && r.sandbox == ctx.sb.limits
            && r.host_gate == *facts.gate
            && r.system == b.inputs.system
            && r.quick == b.quick
            && r.budget.as_ref().map(|x| (x.seconds, x.source.as_str()))
                == b.budget.as_ref().map(|x| (x.per_op.as_secs_f64(), x.source.as_str()))
            && r.host_check.credibility != Credibility::NotCredible;
        if !same {
            crate::detail!("{rel}: made by another run setting; timed again");
        }
        same.then_some(r)
    }
}

/// A record's figures are those its own trials give: the aggregate by the one rule
/// (`stats::aggregate`), the re-run count and the memory figures of its trials, every
/// trial of the plan's length, and no better credibility than its trials' host readings
/// allow. A record edited by hand fails here even when it was indexed again.
pub(crate) fn check_figures(r: &Record) -> Result<()> {
    let plain: Vec<Trial> = r.trials.iter().map(|t| t.trial.clone()).collect();
    if !same(&stats::aggregate(&plain), &r.aggregate) {
        bail!("its aggregate is not what its trials give");
    }
    if r.reruns != r.trials.iter().filter(|t| t.trial.replaced).count() {
        bail!("it records {} re-runs, not the replaced trials it lists", r.reruns);
    }
    // The stack figure comes from a run of its own, not from the trials.
    let derived = Memory { stack: r.memory.stack.clone(), ..Memory::of(&r.trials, r.memory.static_image_bytes) };
    if !same(&derived, &r.memory) {
        bail!("its memory figures are not what its trials give");
    }
    if let Some(t) = r.trials.iter().find(|t| t.trial.iterations != r.plan.iterations) {
        bail!("trial {} ran {} iterations, not the plan's {}", t.slot, t.trial.iterations, r.plan.iterations);
    }
    let slots: std::collections::BTreeSet<usize> = r.trials.iter().map(|t| t.slot).collect();
    let planned = planned_trials(r)?;
    if slots.len() != planned || slots.iter().any(|&s| s >= planned) {
        bail!("its trials fill {} slots of the plan's {planned}", slots.len());
    }
    // The host's readings of the trials bound the credibility (calibration runs, not
    // recorded, can only make it worse).
    let c = r.host_check.credibility;
    let allowance = r.host_check.allowance_ns.unwrap_or(LOAD_SLACK_NS);
    if r.trials.iter().any(|t| t.host_cpu_ns.is_some_and(|cpu| !credible(t.accounted_ns, cpu, allowance)))
        && c != Credibility::NotCredible
    {
        bail!("it says {c:?}, but a trial's host reading is over the bound");
    }
    if r.trials.iter().any(|t| t.host_cpu_ns.is_none()) && c == Credibility::Checked {
        bail!("it says Checked, but the host read no CPU time for some trial");
    }
    check_per_call(r)?;
    check_core(r)
}

/// A record's core is one of its run's timing cores, apart from where the rest ran.
fn check_core(r: &Record) -> Result<()> {
    let Some(c) = &r.core else {
        if r.trials.iter().any(|t| t.cores_busy_ns.is_some()) {
            bail!("its trials have a core's busy time, but it names no core");
        }
        return Ok(());
    };
    if !c.timing_cores.contains(&c.core) || c.siblings.contains(&c.core) {
        bail!("core {} is not among its timing cores {:?} (siblings {:?})", c.core, c.timing_cores, c.siblings);
    }
    if let Some(o) = c.others_on.iter().find(|o| c.timing_cores.contains(o) || c.siblings.contains(o)) {
        bail!("the run's other work is said to have run on core {o}, a timing core or its sibling");
    }
    Ok(())
}

/// The trials a record's plan asked: the spec's, or what its budget allowed, which holds
/// together (enough only from the floor up, never more than the spec's, the iterations
/// its trials ran).
fn planned_trials(r: &Record) -> Result<usize> {
    let Some(b) = &r.budget else { return Ok(r.plan.spec.trials as usize) };
    if let Some(why) = b.contradiction(stats::TRIALS_FLOOR) {
        bail!("{why}");
    }
    if b.allowed == 0 || b.allowed > u64::from(r.plan.spec.trials) || b.iterations != r.plan.iterations {
        bail!(
            "its budget allowed {} trials of {} iterations, for a plan of {} trials of {}",
            b.allowed,
            b.iterations,
            r.plan.spec.trials,
            r.plan.iterations
        );
    }
    if r.plan.fixed_iterations {
        bail!("it has a budget and fixed iterations, which exclude each other");
    }
    Ok(b.allowed as usize)
}

/// A calls run's figures are what its samples give, and agree with the trials'.
fn check_per_call(r: &Record) -> Result<()> {
    let Some(p) = r.per_call.as_ref().filter(|p| p.figures.is_some()) else { return Ok(()) };
    let kept = r.trials.iter().filter(|t| !t.trial.replaced);
    let reference = CallsReference::of(
        kept.map(|t| (t.host_cpu_ns, t.trial.ns, t.trial.ticks, t.accounted_ns, t.trial.iterations)),
    );
    let n = p.ticks.len() as u64;
    let samples = DriverCalls { n, overhead: p.overhead.clone(), ticks: p.ticks.clone() };
    // The window is not recorded: the samples' own sum stands for it.
    let sum = p.ticks.iter().fold(0u64, |a, &t| a.saturating_add(t));
    match per_call_check(&samples, sum) {
        Ok(f) if Some(f) != p.figures => bail!("its per-call figures are not what its samples give"),
        Ok(f) if per_call_doubt(&f, reference) != p.doubt => bail!("its per-call doubt is not what its samples give"),
        Ok(_) => Ok(()),
        Err(why) => bail!("its per-call figures stand, but {why}"),
    }
}

/// Two figures alike as the record holds them (JSON values: floats as written).
fn same<T: Serialize>(a: &T, b: &T) -> bool {
    serde_json::to_value(a).ok() == serde_json::to_value(b).ok()
}

/// What every record of one built instance shares.
struct BuiltFacts<'a> {
    inst: &'a Instance,
    static_image: u64,
    library_sha256: String,
    driver_source_sha256: String,
    driver_sha256: String,
}

impl Timed {
    /// Every trial run, in slot order, replaced ones included.
    fn slot_trials(&self) -> Vec<SlotTrial> {
        let runs = self.slots.iter().enumerate().flat_map(|(slot, runs)| runs.iter().map(move |run| (slot, run)));
        runs.map(|(slot, (t, r))| SlotTrial {
            slot,
            trial: t.clone(),
            baseline_rss_kib: r.baseline_rss_kib,
            peak_rss_kib: r.peak_rss_kib,
            accounted_ns: r.accounted_ns,
            host_cpu_ns: r.host_cpu.as_ref().and_then(HostCpu::ns),
            cores_busy_ns: r.cores_busy_ns,
        })
        .collect()
    }
}

impl Memory {
    /// Median baseline and highest peak of the trials that count.
    fn of(trials: &[SlotTrial], static_image_bytes: u64) -> Memory {
        let kept = || trials.iter().filter(|t| !t.trial.replaced);
        let mut baselines: Vec<i64> = kept().map(|t| t.baseline_rss_kib).collect();
        baselines.sort_unstable();
        Memory {
            static_image_bytes,
            baseline_rss_kib: baselines.get(baselines.len() / 2).copied().unwrap_or(-1),
            peak_rss_kib: kept().map(|t| t.peak_rss_kib).max().unwrap_or(-1),
            stack: None,
        }
    }
}

pub(crate) struct Timed {
    pub spec: PlanSpec,
    pub plan: stats::Plan,
    pub estimate: f64,
    pub calibration: Vec<Calibration>,
    /// The content control's measurements of the calibration runs (hash functions).
    pub calibration_control: Vec<(u8, u64)>,
    pub slots: Vec<Vec<(Trial, DriverReport)>>,
    pub disturbed_total: usize,
    /// Every run of this operation (calibration included) against the host's reading.
    pub host_check: HostCheck,
    /// The stack run's mark (none in tests that make a `Timed` by hand).
    pub stack: Option<StackMark>,
    /// The calls run (none in tests that make a `Timed` by hand).
    pub per_call: Option<PerCall>,
    /// What the operation's budget allowed, when it had one.
    pub budget: Option<schema::Budget>,
}

impl Timed {
    /// Time the driver spent in this operation's processes: the calibration loops and
    /// what every trial (re-runs included) accounted for.
    pub fn run_ns(&self) -> u64 {
        let calibration: u64 = self.calibration.iter().map(|c| c.ns).sum();
        calibration + self.slots.iter().flatten().map(|(_, r)| r.accounted_ns).sum::<u64>()
    }

    /// The content control's measurements of every run, in the order taken.
    fn control(&self) -> impl Iterator<Item = &(u8, u64)> {
        let trials = self.slots.iter().flatten().flat_map(|(_, r)| &r.control);
        self.calibration_control.iter().chain(trials)
    }

    /// The runs that count: the last of each slot (earlier ones were replaced).
    pub fn kept(&self) -> impl Iterator<Item = &(Trial, DriverReport)> {
        self.slots.iter().filter_map(|s| s.last())
    }
}

/// Whether a run times an instance.
type RunsNow<'a> = dyn Fn(&Instance) -> bool + 'a;

/// One writer at a time of a submission's environment manifest and size audit (a
/// campaign's bench steps of one submission's instances may run side by side).
static COMMIT: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// The run's environment manifest and size audit as they stand, with the index: this
/// run's rows of the audit (`audit`, of the instances `runs_now` takes) and the indexed
/// file's rows of the others, read again under the lock.
fn commit_run(
    layout: &Layout,
    sub: &Submission,
    environment: &Environment,
    (audit, runs_now): (&[Disagreement], &RunsNow<'_>),
) -> Result<()> {
    let _one = COMMIT.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    schema::write(&layout.environment(&sub.id), environment)?;
    // Other steps may be writing the index: read it when it is whole.
    let mut rows = crate::evidence::settled(|| kept_audit(layout, sub, runs_now));
    rows.extend_from_slice(audit);
    // In the manifest's order, whichever run found each row.
    rows.sort_by_key(|d| sub.instances.iter().position(|i| i.label == d.instance));
    let audit = SizeAudit { schema: schema::version::<SizeAudit>(), id: sub.id.clone(), disagreements: rows };
    schema::write(&layout.size_audit(&sub.id), &audit)?;
    crate::evidence::update_index(&layout.out)?;
    Ok(())
}

/// The size audit's rows of the instances this run does not time (a run of some of them:
/// `--instance`, a campaign's step per instance), from the indexed file; a file edited
/// since it was indexed, or unreadable, keeps none.
fn kept_audit(layout: &Layout, sub: &Submission, runs_now: &RunsNow<'_>) -> Vec<Disagreement> {
    let path = layout.size_audit(&sub.id);
    let indexed = crate::evidence::read_index(&layout.out)
        .and_then(|index| crate::evidence::indexed(&layout.out, &index, &layout.relative(&path)));
    let Ok(Some(audit)) = indexed.and_then(|()| schema::read::<SizeAudit>(&path)) else { return Vec::new() };
    let others: Vec<&str> = sub.instances.iter().filter(|i| !runs_now(i)).map(|i| i.label.as_str()).collect();
    audit.disagreements.into_iter().filter(|d| others.contains(&d.instance.as_str())).collect()
}

/// The bench step's wall time against the time of its timing runs.
/// The calls run's size: `stats::calls_for`, and within a budget no more than a trial's
/// iterations (the budget counts the calls run as one trial more), odd.
fn calls_within(spec: &PlanSpec, estimate: f64, budget: Option<&schema::Budget>) -> u64 {
    let n = stats::calls_for(spec, estimate);
    match budget {
        Some(b) if b.iterations < n => (b.iterations - u64::from(b.iterations.is_multiple_of(2))).max(1),
        _ => n,
    }
}

fn overhead_line(wall: Duration, trials_ns: u64) -> String {
    let (wall, trials) = (wall.as_secs_f64(), trials_ns as f64 / 1e9);
    let ratio = if trials > 0.0 { format!("{:.2}×", wall / trials) } else { "-".into() };
    format!("wall {wall:.1} s for {trials:.1} s of trials: {ratio}")
}

fn print_audit(audit: &[Disagreement]) {
    if audit.is_empty() {
        crate::say!("  size audit: API sizes agree with the size catalog (submissions/external_sizes*.csv)");
        return;
    }
    crate::say!("  size audit ({} disagreements):", audit.len());
    for d in audit {
        match (d.api, d.catalog) {
            (Some(a), Some(c)) => {
                let basis = d.basis.map_or("-".to_owned(), |b| b.to_string());
                crate::say!("    {} {}: API {a}, catalog {c} ({basis})", d.instance, d.field);
            }
            _ => crate::say!("    {}: no row in the size catalog", d.instance),
        }
    }
}

fn print_row(r: &Record, kept: bool) {
    let a = &r.aggregate;
    crate::ui::row(crate::evidence::schema::ResultRow {
        median_ns_per_op: stats::enough(r).then_some(a.median_trial_ns),
        origin: if kept { "kept" } else { "new" }.into(),
        ..crate::evidence::schema::ResultRow::measured(&r.id, &r.label, &r.op, "timed")
    });
    let ticks = if r.counter.hardware_cycles {
        format!("{} cyc", stats::human_count(a.mean_ticks))
    } else {
        format!("{} {}", stats::human_count(a.mean_ticks), r.counter.name)
    };
    let mut notes = Vec::new();
    if r.reruns > 0 {
        notes.push(format!("{} re-run", r.reruns));
    }
    if r.emulated {
        notes.push("EMULATED, not a measurement".into());
    }
    if r.quick {
        notes.push("quick".into());
    }
    if kept {
        notes.push("kept (--resume)".into());
    }
    if let Some(b) = r.budget.as_ref().filter(|b| !b.enough) {
        notes.push(format!(
            "{}: {} s allowed {} trial(s) of {}",
            stats::NOT_ENOUGH,
            b.seconds,
            b.allowed,
            b.iterations
        ));
    }
    crate::say!(
        "  {:<18} {:<9} {:>14} {:>10} {:>9} {:>12} {:>18}{}",
        r.label,
        r.op.name(),
        ticks,
        stats::human_time(a.mean_ns),
        stats::three_digits(a.ops_per_s),
        stats::human_time(a.median_trial_ns),
        format!("{} ({} × {})", a.n, a.trials, a.iterations),
        if notes.is_empty() { String::new() } else { format!("  [{}]", notes.join(", ")) }
    );
}

/// Why an instance is never timed, if its manifest says so (`timed = false`): the
/// bench and campaign skip it, and the page says this.
pub fn untimed(inst: &Instance) -> Option<&'static str> {
    (!inst.timed).then_some(NOT_TIMED)
}

/// What the bench, campaign and page say of an instance with `timed = false`.
pub const NOT_TIMED: &str = "not timed: manifest";

#[cfg(test)]
mod tests {
    use super::*;

    /// A run of one instance keeps the other instances' rows of the indexed size audit
    /// (a campaign times each instance in a step of its own), and none of an edited one.
    #[test]
    fn a_run_of_one_instance_keeps_the_others_audit_rows_while_indexed() {
        let t = tempfile::tempdir().unwrap();
        let out = Utf8Path::from_path(t.path()).unwrap();
        let layout = Layout::new(out, "local");
        let sub = Submission::load("pqclean-ml-kem").unwrap();
        let row = |label: &str, field: &str| Disagreement {
            id: sub.id.clone(),
            instance: label.into(),
            field: field.into(),
            api: None,
            catalog: None,
            basis: None,
        };
        let golden = project::root().join("xtask/tests/golden/environment.json");
        let env: Environment = schema::read(&golden).unwrap().unwrap();
        let fields = || {
            let audit: SizeAudit = schema::read(&layout.size_audit(&sub.id)).unwrap().unwrap();
            audit.disagreements.iter().map(|d| format!("{} {}", d.instance, d.field)).collect::<Vec<_>>()
        };
        let all = |_: &Instance| true;
        commit_run(&layout, &sub, &env, (&[row("ML-KEM-1024", "row"), row("ML-KEM-512", "row")], &all)).unwrap();
        assert_eq!(fields(), ["ML-KEM-512 row", "ML-KEM-1024 row"], "the manifest's order");
        let only_512 = |i: &Instance| i.label == "ML-KEM-512";
        commit_run(&layout, &sub, &env, (&[row("ML-KEM-512", "pk")], &only_512)).unwrap();
        assert_eq!(fields(), ["ML-KEM-512 pk", "ML-KEM-1024 row"], "1024's row kept, 512's replaced");
        // Edited between runs (1024's field): not the indexed file, none of it kept.
        let path = layout.size_audit(&sub.id);
        let text = std::fs::read_to_string(&path).unwrap().replacen("\"row\"", "\"rows\"", 1);
        std::fs::write(&path, text).unwrap();
        commit_run(&layout, &sub, &env, (&[row("ML-KEM-512", "pk")], &only_512)).unwrap();
        assert_eq!(fields(), ["ML-KEM-512 pk"]);
    }

    #[test]
    fn per_call_samples_outside_their_window_are_refused_and_forged_low_doubted() {
        let calls = |ticks: Vec<u64>, overhead: Vec<u64>| DriverCalls { n: ticks.len() as u64, overhead, ticks };
        let honest = calls(vec![1010, 1020, 1030, 5000, 1015], vec![20, 20, 25, 20, 30]);
        let f = per_call_check(&honest, 9_500).unwrap();
        assert_eq!((f.median, f.overhead_ticks), (1000, 20));
        // 2 ticks per ns; the host read 700 ns of CPU per operation in the trials.
        let host = |ns| Some(CallsReference { host_ns_per_op: ns, ticks_per_ns: 2.0 });
        assert_eq!(per_call_doubt(&f, host(700.0)), None);
        // A median above the trials' is no doubt.
        assert_eq!(per_call_doubt(&f, host(150.0)), None);
        // Calls adding up to more than their window.
        let why = per_call_check(&honest, 8_000).unwrap_err();
        assert!(why.contains("add up to 9075 ticks in a window of 8000"), "{why}");
        // Samples forged to a tenth: more than PROBE_AGREEMENT below the host's reading.
        let low = per_call_check(&calls(vec![101, 102, 103, 500, 101], vec![2; 5]), 9_000).unwrap();
        let why = per_call_doubt(&low, host(700.0)).unwrap();
        assert!(why.contains("the median call, 50 ns, is 14.0x below the 700 ns"), "{why}");
        // Without a host reading there is nothing to hold them against.
        assert_eq!(per_call_doubt(&low, None), None);
        // An overhead forged up to the calls' own cost.
        let up = calls(vec![1010, 1020, 1030, 5000, 1015], vec![2000; 5]);
        assert!(per_call_check(&up, 9_500).unwrap_err().contains("no less than the median call"));
        // Fewer samples than the run's calls.
        let short = DriverCalls { n: 6, ..honest.clone() };
        assert!(per_call_check(&short, 9_500).unwrap_err().contains("5 calls and 5 empty calls"));
    }

    #[test]
    fn the_host_gate_decides_alike_under_emulation_and_records_an_override() {
        use crate::evidence::domain::Arch;
        use clap::Parser;
        // An unfixed host: no cpufreq, no topology, paranoid 3.
        let root = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.path().join("proc/sys/kernel")).unwrap();
        std::fs::write(root.path().join("proc/sys/kernel/perf_event_paranoid"), "3\n").unwrap();
        let root = Utf8Path::from_path(root.path()).unwrap();
        let profile = SystemProfile::load("local").unwrap();
        for arch in [Arch::host(), if Arch::host() == Arch::X86_64 { Arch::Aarch64 } else { Arch::X86_64 }] {
            let bench = |extra: &[&str]| {
                let x = crate::flags::Xtask::parse_from([&["xtask", "bench", "--arch", arch.uname()], extra].concat());
                let crate::flags::Cmd::Bench(b) = x.cmd else { panic!() };
                let b: Bench = b.into();
                b
            };
            let refused = bench(&[]).gate_on(&profile, root).unwrap_err();
            let text = format!("{refused:#}");
            assert!(text.contains("refusing to time on an unfixed host"), "{arch:?}: {text}");
            assert!(text.contains("add --allow-unfixed-host to the same command"), "{arch:?}: the way through: {text}");
            let gate = bench(&["--allow-unfixed-host"]).gate_on(&profile, root).unwrap();
            assert!(!gate.failed().is_empty() && gate.overridden, "{arch:?}: failed checks let through are recorded");
        }
    }

    /// `n` measurements alternating class 0 and 1 with a spread of ±50 ns around 1 µs;
    /// class 1 `scale` times slower.
    fn control(n: u64, scale: f64) -> Vec<(u8, u64)> {
        (0..n)
            .map(|i| {
                let class = (i % 2) as u8;
                let ns = 950.0 + (i * 7919 % 101) as f64;
                (class, (ns * if class == 1 { scale } else { 1.0 }) as u64)
            })
            .collect()
    }

    #[test]
    fn content_dependent_speed_is_dudects_verdict_on_enough_measurements() {
        let judge = |m: Vec<(u8, u64)>| content_control(m.iter());
        let none = judge(vec![]);
        assert_eq!(
            (none.verdict, none.taken, none.welch, none.ratio),
            (ContentVerdict::TooFewMeasurements, [0, 0], None, None)
        );
        let few = judge(control(2 * stats::MIN_PER_CLASS, 50.0));
        assert_eq!(few.verdict, ContentVerdict::TooFewMeasurements, "the first 2 % are warm-up: {few:?}");
        assert_eq!(few.taken, [stats::MIN_PER_CLASS; 2]);
        let even = judge(control(2_000, 1.0));
        assert_eq!(even.verdict, ContentVerdict::NoneFound, "{even:?}");
        assert!((even.ratio.unwrap() - 1.0).abs() < 0.01 && even.welch.unwrap().t.abs() <= stats::THRESHOLD);
        let slow = judge(control(2_000, 50.0));
        let t = slow.welch.as_ref().unwrap().t;
        assert_eq!(slow.verdict, ContentVerdict::Depends, "{slow:?}");
        assert!(t < -stats::THRESHOLD && (slow.ratio.unwrap() - 50.0).abs() < 0.5, "{slow:?}");
        let fast = judge(control(2_000, 0.5));
        assert!(fast.verdict == ContentVerdict::Depends && fast.welch.unwrap().t > stats::THRESHOLD, "faster too");
        // A class 0 of zero nanoseconds has no ratio; the verdict stands.
        let zero: Vec<(u8, u64)> = control(2_000, 1.0).into_iter().map(|(c, ns)| (c, ns * u64::from(c))).collect();
        let z = judge(zero);
        assert_eq!((z.verdict, z.ratio), (ContentVerdict::Depends, None), "{z:?}");
        assert_eq!(
            (z.threshold, z.min_per_class, z.classes.as_str()),
            (stats::THRESHOLD, stats::MIN_PER_CLASS, CONTENT_CLASSES)
        );
    }

    fn report(iterations: u64, ns: u64, ticks: u64) -> DriverReport {
        DriverReport {
            iterations,
            ns,
            ticks,
            accounted_ns: ns,
            counter: CounterKind::Tsc,
            counter_nominal_hz: 0,
            perf_errno: libc::ENOENT,
            baseline_rss_kib: 1,
            peak_rss_kib: 1,
            api_sizes: Sizes::default(),
            returned_sizes: Sizes::default(),
            out_len: LenStats::default(),
            control: Vec::new(),
            failed_attempts: 0,
            profile: Vec::new(),
            stack: None,
            calls: None,
            host_cpu: None,
            cores_busy_ns: None,
        }
    }

    /// A stack run's report line as the driver writes it, with `stack` as the tail.
    fn stack_line(stack: &str) -> String {
        format!(
            "{{\"api\":\"ICCS\",\"op\":\"dec\",\"iterations\":1,\"warmups\":0,\"cpu\":-1,\"ns\":5000,\
             \"ticks\":9000,\"excluded_ns\":0,\"accounted_ns\":90000,\"counter\":\"tsc\",\
             \"counter_nominal_hz\":0,\"perf_errno\":2,\"baseline_rss_kib\":1800,\"peak_rss_kib\":1900,\
             \"ru_maxrss_kib\":1900{stack},\"api_sizes\":{{\"pk\":16}},\"returned_sizes\":{{\"pk\":16}}}}"
        )
    }

    fn parsed_stack(stack: &str) -> std::result::Result<DriverStack, String> {
        let r: DriverReport = serde_json::from_str(&stack_line(stack)).map_err(|e| format!("parse: {e}"))?;
        r.check(1)?;
        stack_use(r.stack)
    }

    #[test]
    fn stack_reports_are_bounded() {
        let ok = parsed_stack(r#","stack":{"painted":7340032,"used":5232,"exceeded":false}"#).unwrap();
        assert_eq!(ok, DriverStack { painted: 7 << 20, used: 5232, exceeded: false });
        // The whole region written: at least the region, said as such.
        let all = parsed_stack(r#","stack":{"painted":8388608,"used":8388656,"exceeded":true}"#).unwrap();
        assert!(all.exceeded && all.used >= all.painted);
        let said_not = parsed_stack(r#","stack":{"painted":8388608,"used":8388656,"exceeded":false}"#).unwrap();
        assert_eq!(said_not, all);
        // A timing run's report has no stack figure; a stack run's must.
        assert!(parsed_stack("").unwrap_err().contains("no stack figure"));
        for (stack, why) in [
            (r#","stack":{"painted":0,"used":8,"exceeded":false}"#, "painted stack region of 0"),
            (r#","stack":{"painted":16777216,"used":8,"exceeded":false}"#, "region of 16777216"),
            (r#","stack":{"painted":7340033,"used":8,"exceeded":false}"#, "region of 7340033"),
            (r#","stack":{"painted":1048576,"used":0,"exceeded":false}"#, "0 bytes of stack"),
            (r#","stack":{"painted":1048576,"used":1114113,"exceeded":false}"#, "1114113 bytes"),
            (r#","stack":{"painted":1048576,"used":18446744073709551615,"exceeded":false}"#, "bytes of stack"),
            (r#","stack":{"painted":1048576,"used":4096,"exceeded":true}"#, "the whole painted region"),
            (r#","stack":{"painted":1048576,"used":-8,"exceeded":false}"#, "parse"),
            (r#","stack":{"painted":1048576,"used":18446744073709551616,"exceeded":false}"#, "parse"),
            (r#","stack":{"painted":1048576,"used":"8","exceeded":false}"#, "parse"),
            (r#","stack":{"painted":1048576,"used":8,"exceeded":1}"#, "parse"),
            (r#","stack":{"painted":1048576,"used":8}"#, "parse"),
            (r#","stack":{"painted":1048576,"used":8,"exceeded":false,"unit":"words"}"#, "parse"),
            (r#","stack":{"painted":1048576,"used":8,"used":9,"exceeded":false}"#, "parse"),
            (r#","stack":{"painted":1048576,"used":8,"exceeded":false},"stack":null"#, "parse"),
            // serde takes a struct as a sequence too: the same bounds hold.
            (r#","stack":[1048576,0,false]"#, "0 bytes of stack"),
            (r#","stack":null"#, "no stack figure"),
            (r#","stack":{"painted":1048576,"used":8.5,"exceeded":false}"#, "parse"),
        ] {
            let got = parsed_stack(stack);
            assert!(got.as_ref().is_err_and(|e| e.contains(why)), "{stack}: {got:?}");
        }
    }

    #[test]
    fn forged_driver_figures_are_refused() {
        assert!(report(100, 1_000_000, 3_000_000).check(100).is_ok());
        assert!(report(99, 1_000_000, 3_000_000).check(100).unwrap_err().contains("99 iterations"));
        assert!(report(100, 0, 0).check(100).is_err());
        assert!(report(100, u64::MAX, u64::MAX).check(100).is_err());
        assert!(report(100, 1000, u64::MAX).check(100).is_err());
        let inside = DriverReport { accounted_ns: 999_999, ..report(100, 1_000_000, 3_000_000) };
        assert!(inside.check(100).unwrap_err().contains("accounted"), "the loop is part of what it accounts");
        let with =
            |control: Vec<(u8, u64)>| DriverReport { control, accounted_ns: 1_500_000, ..report(100, 1_000_000, 3) };
        assert!(with(vec![(0, 250_000), (1, 250_000)]).check(100).is_ok());
        assert!(with(vec![(0, 250_000), (1, 250_001)]).check(100).unwrap_err().contains("content-control calls"));
        assert!(with(vec![(0, 1), (2, 1)]).check(100).unwrap_err().contains("of class 2"));
        assert!(with(vec![(1, u64::MAX), (1, u64::MAX)]).check(100).is_err(), "no overflow");
        let json = r#"{"iterations":1,"ns":5,"ticks":5,"accounted_ns":5,"counter":"rdtsc-forged","counter_nominal_hz":0,"perf_errno":0,
            "baseline_rss_kib":1,"peak_rss_kib":1,"api_sizes":{"pk":1,"sk":1,"ct":1,"ss":1},
            "returned_sizes":{"pk":1,"sk":1,"ct":1,"ss":1}}"#;
        assert!(serde_json::from_str::<DriverReport>(json).is_err(), "unknown counters are refused");
        assert_eq!(why_no_cycles(libc::EACCES).unwrap(), "perf_event_open: permission denied (errno 13)");
    }

    #[test]
    fn the_host_bound_marks_reports_far_below_the_cpu_it_read() {
        let run = |accounted_ms: u64, host: HostCpu| HostRun { accounted_ns: accounted_ms * 1_000_000, host };
        let ms = |m: u64| HostCpu::Ns(m * 1_000_000);
        // A trial process's start measured at 1.5 ms natively: 5.25 ms allowed beside 1.25 x.
        let allowance = allowance_ns(Some(1_500_000), false);
        assert_eq!(allowance, 5_250_000);
        assert_eq!(allowance_ns(Some(1_500_000), true), 102_250_000);
        assert_eq!(allowance_ns(None, false), LOAD_SLACK_NS, "no start read: the container's start");
        // Honest: 1 s accounted, 1.004 s of CPU with the process's start.
        assert!(credible(1_000_000_000, 1_004_000_000, allowance));
        // The bound itself: 1.25 x 1 s + 5.25 ms.
        assert!(credible(1_000_000_000, 1_255_250_000, allowance));
        assert!(!credible(1_000_000_000, 1_255_250_001, allowance));
        // The forgery that passed a fixed 100 ms: a fast operation's trial reporting a
        // twentieth of the CPU the host read (issue 32: 0.35 ms accounted, 6.43 ms read).
        assert!(credible(354_772, 6_428_940, LOAD_SLACK_NS) && !credible(354_772, 6_428_940, allowance));
        // A start half as long again as the probes' is within the bound.
        assert!(credible(354_772, 354_772 + 2_250_000, allowance));
        let ok = HostCheck::of(&[run(1000, ms(1001)), run(50, ms(52))], allowance);
        assert_eq!((ok.credibility, ok.detail.clone()), (Credibility::Checked, None));
        assert_eq!(ok.allowance_ns, Some(allowance));
        let forged = HostCheck::of(&[run(1000, ms(1001)), run(50, ms(540))], allowance);
        assert_eq!(forged.credibility, Credibility::NotCredible);
        assert!(forged.detail.as_deref().unwrap().contains("run 2: host CPU 540.0 ms for 50.0 ms accounted"));
        // No reading is never taken for a check; a forged run wins over a missing reading.
        let unread = HostCheck::of(&[run(1000, ms(1001)), run(50, HostCpu::Unavailable("rootless".into()))], allowance);
        assert_eq!(unread.credibility, Credibility::SelfReported);
        assert!(unread.detail.as_deref().unwrap().contains("rootless"));
        let both = HostCheck::of(&[run(50, ms(540)), run(50, HostCpu::Unavailable("rootless".into()))], allowance);
        assert_eq!(both.credibility, Credibility::NotCredible);
        assert_eq!(unread.clone().worse(forged.clone()).credibility, Credibility::NotCredible);
        assert_eq!(ok.worse(unread).credibility, Credibility::SelfReported);
        assert_eq!(HostCheck::of(&[], allowance).credibility, Credibility::Checked);
    }

    /// A longer run that reports 50 ns per operation of 1,200,000.
    fn claims_50_ns() -> Probe {
        Probe { iterations: 1_200_000, ns: 60_000_000, accounted_ns: 61_000_000, host_cpu_ns: None }
    }

    #[test]
    fn a_kat_run_far_above_the_timed_figures_makes_them_not_credible() {
        // The fixture's figures: an honest KAT run of 36 ms (the container's start), the
        // chameleon's 165 ms, where the timed calls of 10 records need 0.05 ms.
        assert!(kat_credible(36_014_541, 50_000) && !kat_credible(165_119_431, 50_000));
        // Slow operations: a KAT run up to ten times what the warm means say, and the start.
        assert!(kat_credible(1_100_000_000, 100_000_000) && !kat_credible(1_100_000_001, 100_000_000));
    }

    #[test]
    fn short_trials_get_a_longer_run_whose_time_per_operation_they_must_match() {
        let allowance = 6_000_000;
        // 20,000 iterations of 50 ns: 1 ms a trial, far below 10 allowances (60 ms).
        let short = [report(20_000, 1_000_000, 1), report(20_000, 1_100_000, 1), report(20_000, 900_000, 1)];
        let kept: Vec<&DriverReport> = short.iter().collect();
        assert_eq!(probe_iterations(&kept, allowance), Some(1_200_000), "60 ms at 50 ns");
        // Long trials need none; the run is at most 1000 times a trial's iterations.
        let long = [report(20_000, 80_000_000, 1)];
        assert_eq!(probe_iterations(&long.iter().collect::<Vec<_>>(), allowance), None);
        let tiny = [report(1, 1, 1)];
        assert_eq!(probe_iterations(&tiny.iter().collect::<Vec<_>>(), allowance), Some(1000));
        let checked = || HostCheck::of(&[], allowance);
        // The longer run agrees (70 ns against 50): credible, and recorded.
        let agrees = Probe { iterations: 1_200_000, ns: 84_000_000, accounted_ns: 85_000_000, host_cpu_ns: None };
        let c = checked().with_probe(Some(agrees.clone()), &kept);
        assert_eq!((c.credibility, c.probe), (Credibility::Checked, Some(agrees)));
        assert!(c.rule.contains("one run that long"), "{}", c.rule);
        // Forged only in short runs: 50 ns in the trials, 450 ns in the longer run.
        let honest = Probe { iterations: 1_200_000, ns: 540_000_000, accounted_ns: 540_000_000, host_cpu_ns: None };
        let c = checked().with_probe(Some(honest), &kept);
        assert_eq!(c.credibility, Credibility::NotCredible);
        assert!(c
            .detail
            .unwrap()
            .contains("the trials report 50.0 ns per operation, a run of 1200000 iterations 450.0 ns"));
        assert_eq!(checked().with_probe(None, &kept).probe, None);
        // The host's CPU is the run's figure where it was read: its own word does not help it.
        let read = Probe { host_cpu_ns: Some(540_000_000), ..claims_50_ns() };
        assert_eq!(checked().with_probe(Some(read), &kept).credibility, Credibility::NotCredible);
        // Untimed preparation inside the run (a key exchange's fresh inputs) is not the
        // operation's: three quarters of 240 ms of CPU outside the timed loop, 50 ns left.
        let prepared =
            Probe { iterations: 1_200_000, ns: 60_000_000, accounted_ns: 240_000_000, host_cpu_ns: Some(240_000_000) };
        assert_eq!(checked().with_probe(Some(prepared), &kept).credibility, Credibility::Checked);
    }

    #[test]
    fn a_kept_record_has_the_figures_its_trials_give() {
        let golden = project::root().join("xtask/tests/golden/record.json");
        let r: Record = schema::read(&golden).unwrap().unwrap();
        assert!(check_figures(&r).is_ok(), "{:#}", check_figures(&r).unwrap_err());
        let why = |edit: &dyn Fn(&mut Record)| {
            let mut forged = r.clone();
            edit(&mut forged);
            format!("{:#}", check_figures(&forged).unwrap_err())
        };
        assert!(why(&|f| f.aggregate.mean_ns *= 0.5).contains("aggregate"));
        assert!(why(&|f| f.aggregate.median_trial_ns -= 1.0).contains("aggregate"));
        assert!(why(&|f| f.trials[0].trial.ns /= 2).contains("aggregate"));
        assert!(why(&|f| f.reruns += 1).contains("re-runs"));
        assert!(why(&|f| f.memory.peak_rss_kib -= 1).contains("memory"));
        // The core: one of its run's timing cores, the rest of the run elsewhere.
        let core = schema::CoreUse {
            core: 1,
            siblings: vec![5],
            timing_cores: vec![1, 2],
            others_on: vec![0, 3],
            beside: None,
        };
        let on = |c: schema::CoreUse| Record { core: Some(c), ..r.clone() };
        assert!(check_figures(&on(core.clone())).is_ok());
        let e = |c: schema::CoreUse| format!("{:#}", check_figures(&on(c)).unwrap_err());
        assert!(e(schema::CoreUse { core: 4, ..core.clone() }).contains("not among its timing cores"));
        assert!(e(schema::CoreUse { others_on: vec![0, 2], ..core.clone() }).contains("a timing core"));
        assert!(e(schema::CoreUse { others_on: vec![5], ..core.clone() }).contains("a timing core or its sibling"));
        assert!(why(&|f| f.trials[0].cores_busy_ns = Some(1)).contains("names no core"));
        assert!(
            why(&|f| f.trials.truncate(1)).contains("aggregate") || why(&|f| f.trials.truncate(1)).contains("slots")
        );
        // Single calls: figures and doubt are what the samples give, against the trials.
        let kept = r.trials.iter().filter(|t| !t.trial.replaced);
        let reference = CallsReference::of(
            kept.map(|t| (t.host_cpu_ns, t.trial.ns, t.trial.ticks, t.accounted_ns, t.trial.iterations)),
        );
        let with_calls = |per_op: u64| {
            let ticks: Vec<u64> = (0..31).map(|i| per_op + i * 7).collect();
            let figures = stats::per_call(&ticks, &[26; 31]);
            let doubt = figures.and_then(|f| per_call_doubt(&f, reference));
            let p = PerCall { command: vec![], overhead: vec![26; 31], ticks, figures, doubt, failed: None };
            Record { per_call: Some(p), ..r.clone() }
        };
        let per_op = r.aggregate.mean_ticks as u64;
        let (honest, low) = (with_calls(per_op), with_calls(per_op / 10));
        assert!(honest.per_call.as_ref().unwrap().doubt.is_none() && low.per_call.as_ref().unwrap().doubt.is_some());
        for ok in [&honest, &low] {
            assert!(check_figures(ok).is_ok(), "{:#}", check_figures(ok).unwrap_err());
        }
        let forged = |mut f: Record, edit: &dyn Fn(&mut PerCall)| {
            edit(f.per_call.as_mut().unwrap());
            format!("{:#}", check_figures(&f).unwrap_err())
        };
        assert!(forged(honest.clone(), &|p| p.figures.as_mut().unwrap().median /= 2).contains("not what its samples"));
        assert!(forged(low, &|p| p.doubt = None).contains("doubt is not what"));
        assert!(forged(honest, &|p| p.overhead = vec![1 << 40; 31]).contains("no less than the median call"));
    }

    /// A budget's record holds together: its trials are what it allowed, "enough" only
    /// from the floor up, and no fixed iterations beside it.
    #[test]
    fn a_kept_records_budget_must_match_its_trials() {
        let golden = project::root().join("xtask/tests/golden/record.json");
        let r: Record = schema::read(&golden).unwrap().unwrap();
        let planned = r.plan.spec.trials as u64;
        let b = TimeBudget::given(Duration::from_secs(60));
        let budget = schema::Budget::of(&b, 1e8, (planned, r.plan.iterations), stats::TRIALS_FLOOR);
        let ok = Record { budget: Some(budget.clone()), ..r.clone() };
        assert!(check_figures(&ok).is_ok(), "{:#}", check_figures(&ok).unwrap_err());
        assert!(stats::enough(&ok) && stats::enough(&r));
        let why = |edit: &dyn Fn(&mut schema::Budget)| {
            let mut f = ok.clone();
            edit(f.budget.as_mut().unwrap());
            format!("{:#}", check_figures(&f).unwrap_err())
        };
        assert!(why(&|b| b.enough = false).contains("not enough with 3 allowed"), "{}", why(&|b| b.enough = false));
        assert!(why(&|b| b.floor = 1).contains("floor"));
        assert!(why(&|b| b.iterations += 1).contains("iterations"));
        // Fewer trials allowed than the record holds, said enough or not.
        assert!(why(&|b| b.allowed = 2).contains("says enough"));
        assert!(why(&|b| (b.allowed, b.enough) = (2, false)).contains("slots"));
        let fixed = Record { plan: PlanRecord { fixed_iterations: true, ..ok.plan.clone() }, ..ok.clone() };
        assert!(format!("{:#}", check_figures(&fixed).unwrap_err()).contains("exclude"));
        // Not enough: shown as such, never as figures (the noise rule names it first).
        let mut few = ok.clone();
        few.budget.as_mut().unwrap().enough = false;
        few.budget.as_mut().unwrap().allowed = 2;
        few.trials.retain(|t| t.slot < 2);
        few.aggregate = stats::aggregate(&few.trials.iter().map(|t| t.trial.clone()).collect::<Vec<_>>());
        few.reruns = few.trials.iter().filter(|t| t.trial.replaced).count();
        few.memory =
            Memory { stack: few.memory.stack.clone(), ..Memory::of(&few.trials, few.memory.static_image_bytes) };
        assert!(check_figures(&few).is_ok(), "{:#}", check_figures(&few).unwrap_err());
        assert!(!stats::enough(&few) && stats::indicative(&few)[0] == stats::NOT_ENOUGH);
    }

    #[test]
    fn the_calls_run_stays_within_a_budgets_trial() {
        let spec = PlanSpec::reference(1.0);
        let b = |iterations| schema::Budget::of(&TimeBudget::given(Duration::from_secs(9)), 1.0, (3, iterations), 3);
        assert_eq!(calls_within(&spec, 20_000.0, None), stats::CALLS_MAX);
        assert_eq!(calls_within(&spec, 20_000.0, Some(&b(13))), 13);
        assert_eq!(calls_within(&spec, 20_000.0, Some(&b(14))), 13);
        assert_eq!(calls_within(&spec, 20_000.0, Some(&b(1))), 1);
        assert_eq!(calls_within(&spec, 20_000.0, Some(&b(50_000))), stats::CALLS_MAX);
    }
}
