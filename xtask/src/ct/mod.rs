//! `cargo xtask ct`: each secret-handling operation of an instance under valgrind's
//! memcheck with its secrets undefined, in the toolchain's analysis image. What the
//! family poisons and declassifies is its ct driver's (`Family::ct`); this module builds,
//! runs, reads memcheck's XML and writes one record per operation.
//!
//! Decapsulation, and every operation with a finding, also gets a dudect-style timing
//! test (`timing`). A campaign runs the two parts as steps of their own (`Parts`): the
//! memcheck part writes each record without its timing test, the timing part completes it.
//!
//! A finding is a fact memcheck saw on the paths run. No finding is no proof, and a
//! candidate's own code can mark its secrets defined: the library is scanned for valgrind
//! client requests, and a record says how many it holds.

pub mod memcheck;
pub mod timing;

use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use camino::Utf8Path;
use xshell::Shell;

use crate::compile::builder::{Build, BuildCtx, BuildEnv, Built, RunCtx};
use crate::compile::options::Inputs;
use crate::compile::recipe;
use crate::compile::sources::Source;
use crate::compile::submission::{Instance, PublicDerived, Submission};
use crate::container::sandbox::Sandbox;
use crate::evidence::schema::{
    self, AnalysisLayer, CtFinding, CtRecord, CtStatus, CtTiming, CtTimingStatus, OpId, ResultRow, ToolchainRecord,
};
use crate::evidence::Layout;
use crate::family::{CtCheck, CtOp};
use crate::measure::runner::{self, RunnerBinary};
use crate::measure::stats::TimeBudget;
use crate::project;

/// What a `ct` run does beyond its inputs; the defaults live here.
#[derive(Debug, Clone)]
pub struct CtOptions {
    pub ops: Vec<String>,
    pub runs: u32,
    pub timeout_s: u64,
    /// The timing test's measurements, both classes together; 0: no timing test. With
    /// a budget, the most it may allow.
    pub measurements: u64,
    /// The timing test's budget per operation, from which its count follows.
    pub budget: Option<TimeBudget>,
    /// The parts this run takes (the command: both).
    pub parts: Parts,
}

/// The two parts of a check: memcheck's runs (untimed) and the timing test (timed). A
/// campaign runs them as steps of their own, so that memcheck runs beside other work;
/// the timing part reads the memcheck part's records and completes them, so a record
/// still holds both.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Parts {
    #[default]
    Both,
    /// memcheck only: records without a timing test, which the timing part completes.
    Memcheck,
    /// The timing test of the operations whose memcheck record asks for one.
    Timing,
}

impl Default for CtOptions {
    fn default() -> CtOptions {
        CtOptions { ops: vec![], runs: 4, timeout_s: 3600, measurements: 20_000, budget: None, parts: Parts::Both }
    }
}

impl CtOptions {
    /// A quick campaign's (CI): the same records, with the fewest measurements the
    /// timing test takes.
    pub fn quick() -> CtOptions {
        CtOptions { measurements: timing::MIN_MEASUREMENTS, ..CtOptions::default() }
    }

    /// With a time budget per operation: the count follows from it, capped by
    /// `cap` (`--measurements`, when given) or else by the most the test takes.
    pub fn with_budget(self, budget: Option<TimeBudget>, cap: Option<u64>) -> CtOptions {
        match budget {
            Some(b) if self.measurements > 0 => {
                CtOptions { measurements: cap.unwrap_or(timing::MAX_MEASUREMENTS), budget: Some(b), ..self }
            }
            _ => self,
        }
    }
}

/// `cargo xtask ct`.
pub fn run(sh: &Shell, inputs: &Inputs, opts: &CtOptions) -> Result<()> {
    let seen = run_ct(sh, inputs, opts)?;
    let all: Vec<String> = seen.failures.iter().chain(&seen.open).chain(&seen.findings).cloned().collect();
    crate::ui::report("ct", (&inputs.system, &inputs.out), &all)?;
    if !all.is_empty() {
        return Err(crate::ui::Findings(format!("constant-time findings or failures:\n  {}", all.join("\n  "))).into());
    }
    Ok(())
}

/// What a run saw, one line per operation.
#[derive(Debug, Default)]
pub struct Seen {
    pub findings: Vec<String>,
    /// Undetermined, nothing poisoned or an inconclusive timing test: recorded facts
    /// without a conclusion.
    pub open: Vec<String>,
    /// Failed runs and failed builds.
    pub failures: Vec<String>,
}

/// Check every selected submission.
pub fn run_ct(sh: &Shell, inputs: &Inputs, opts: &CtOptions) -> Result<Seen> {
    let run = inputs.prepare(sh, |sub| check(sub, opts))?;
    ct_all(sh, (inputs, opts), &run.ctx, &run.work)
}

/// The parts `opts` asks for of `work`: memcheck in the analysis image beside `run`'s
/// toolchain image, the timing test in the toolchain image (a campaign's steps).
pub fn ct_all(
    sh: &Shell,
    (inputs, opts): (&Inputs, &CtOptions),
    run: &RunCtx,
    work: &[(Submission, Source)],
) -> Result<Seen> {
    let mut seen = Seen::default();
    if opts.parts == Parts::Timing {
        let timing = timing_env(sh, (inputs, opts), run)?;
        let t = TimeCtx { sh, inputs, opts, layout: &run.layout, timing: timing.as_ref() };
        for (sub, src) in work {
            time_submission(&t, (sub, src), &mut seen)?;
        }
    } else {
        memcheck_all(sh, (inputs, opts), run, work, &mut seen)?;
    }
    crate::evidence::reindex(&inputs.out)?;
    Ok(seen)
}

/// Check `work` in the analysis image beside `run`'s toolchain image, with the timing
/// test unless `opts` asks for memcheck only.
fn memcheck_all(
    sh: &Shell,
    (inputs, opts): (&Inputs, &CtOptions),
    run: &RunCtx,
    work: &[(Submission, Source)],
    seen: &mut Seen,
) -> Result<()> {
    let analysis = run.env.analysis(sh)?;
    let sb = analysis.sandbox(inputs.limits());
    let tc = analysis.record(sh, &sb)?;
    let layer =
        analysis.lock.as_ref().and_then(|l| l.analysis.clone()).context("no analysis layer in the image lock")?;
    let timing = if opts.parts == Parts::Both { timing_env(sh, (inputs, opts), run)? } else { None };
    for (sub, src) in work {
        let t = TimeCtx { sh, inputs, opts, layout: &run.layout, timing: timing.as_ref() };
        let ctx = Ctx { t, env: &analysis, sb: &sb, tc: &tc, layer: &layer };
        ct_submission(&ctx, sub, src, seen)?;
    }
    Ok(())
}

/// Where the timing test runs: the toolchain image (not the analysis image), in the
/// sandbox and under the trial runner every timed run of the build's program has. None
/// when no timing test is run, or under qemu-user emulation.
struct TimingEnv<'a> {
    env: &'a BuildEnv,
    sb: Sandbox,
    tc: ToolchainRecord,
    runner: RunnerBinary,
}

fn timing_env<'a>(sh: &Shell, (inputs, opts): (&Inputs, &CtOptions), run: &'a RunCtx) -> Result<Option<TimingEnv<'a>>> {
    if opts.measurements == 0 {
        return Ok(None);
    }
    let sb = run.env.sandbox(runner::trial_limits(inputs.limits()));
    let tc = run.env.record(sh, &sb)?;
    if tc.emulated {
        return Ok(None);
    }
    let runner = runner::ensure(sh, &sb)?;
    Ok(Some(TimingEnv { env: &run.env, sb, tc, runner }))
}

/// Whether `ct` can check `sub` (a campaign adds the step only then).
pub fn applies(sub: &Submission) -> bool {
    recipe::ct_refusal(sub).is_ok_and(|why| why.is_none())
}

/// The operations `ct` checks for `sub` by default.
pub fn default_ops(sub: &Submission) -> Vec<&'static str> {
    sub.family().ok().and_then(|f| f.ct).map(|c| c.ops.iter().map(|o| o.id).collect()).unwrap_or_default()
}

/// `sub` has a constant-time variant, and every `--op` is one of its family's.
pub fn check(sub: &Submission, opts: &CtOptions) -> Result<()> {
    if let Some(why) = recipe::ct_refusal(sub)? {
        return crate::ui::usage(why);
    }
    let family = sub.family()?;
    selected(&family.ct.context("no ct driver")?, &opts.ops, family.noun).map(drop)
}

/// The operations asked for (or all), each one the family's ct driver has.
fn selected(ct: &CtCheck, asked: &[String], noun: &str) -> Result<Vec<CtOp>> {
    if asked.is_empty() {
        return Ok(ct.ops.to_vec());
    }
    let known: Vec<&str> = ct.ops.iter().map(|o| o.id).collect();
    asked
        .iter()
        .map(|a| match ct.ops.iter().find(|o| o.id == a) {
            Some(o) => Ok(*o),
            None => crate::ui::usage(format!("--op {a}: ct checks a {noun}'s {}", known.join(", "))),
        })
        .collect()
}

/// What every timing test shares.
struct TimeCtx<'a> {
    sh: &'a Shell,
    inputs: &'a Inputs,
    opts: &'a CtOptions,
    layout: &'a Layout,
    /// Where the timing test runs; None when it is not run here (emulation, or
    /// `--no-timing`, or a memcheck part).
    timing: Option<&'a TimingEnv<'a>>,
}

/// What every operation's memcheck run shares, and its timing tests.
struct Ctx<'a> {
    t: TimeCtx<'a>,
    env: &'a BuildEnv,
    sb: &'a Sandbox,
    tc: &'a ToolchainRecord,
    layer: &'a AnalysisLayer,
}

fn ct_submission(ctx: &Ctx, sub: &Submission, src: &Source, seen: &mut Seen) -> Result<()> {
    let family = sub.family()?;
    let ct = family.ct.context("no ct driver")?;
    let ops = selected(&ct, &ctx.t.opts.ops, family.noun)?;
    let (sh, inputs, layout) = (ctx.t.sh, ctx.t.inputs, ctx.t.layout);
    let bctx = BuildCtx { sh, env: ctx.env, tc: ctx.tc, sb: ctx.sb, sub, src, inputs };
    crate::say!("{} ({}): constant-time check under {}", sub.id, sub.name, ctx.layer.valgrind_version);
    let runs_now = |label: &str, op: &str| {
        sub.instances.iter().any(|i| i.label == label && inputs.selects(i)) && ops.iter().any(|o| o.id == op)
    };
    drop_unchecked(layout, sub, &runs_now)?;
    for inst in sub.instances.iter().filter(|i| inputs.selects(i)) {
        let Built::Ok(build) = bctx.ensure_ct(inst)? else {
            seen.failures
                .push(format!("{} {}: the constant-time build failed (see `cargo xtask verify`)", sub.id, inst.label));
            continue;
        };
        let requests = client_requests(&build.out.join(recipe::LIBRARY))?;
        let reference = reference_build(&ctx.t, (sub, src), inst)?;
        let builds = Builds { ct: &build, reference: reference.as_ref() };
        for op in &ops {
            let _live = crate::ui::progress(format!("ct {} {} {}", sub.id, inst.label, op.id), None);
            let rec = record(ctx, (sub, inst, &builds), (&ct, op), requests)?;
            print_row(&rec);
            schema::write(&layout.ct(&sub.id, &inst.label, op.id), &rec)?;
            crate::evidence::update_index(&inputs.out)?;
            let line = format!("{} {} {}: {}", sub.id, inst.label, op.id, summary(&rec));
            match rec.status {
                CtStatus::Findings => seen.findings.push(line),
                CtStatus::NoneFound => {}
                CtStatus::Undetermined | CtStatus::NothingPoisoned => seen.open.push(line),
                CtStatus::Failed => seen.failures.push(line),
            }
            seen.timing(&rec);
        }
    }
    Ok(())
}

impl Seen {
    /// The line of a record's timing test, if it has one.
    fn timing(&mut self, rec: &CtRecord) {
        let Some(t) = &rec.timing else { return };
        let line = format!("{} {} {}: {}", rec.id, rec.label, rec.op.name(), timing_summary(t));
        match t.status {
            CtTimingStatus::Differs => self.findings.push(line),
            CtTimingStatus::Inconclusive | CtTimingStatus::NotEnough => self.open.push(line),
            CtTimingStatus::Failed => self.failures.push(line),
            CtTimingStatus::NoneFound | CtTimingStatus::NotRun => {}
        }
    }
}

/// The timing part of `sub`'s selected instances: each operation's record, as the
/// memcheck part left it, completed with the timing test its status asks for.
fn time_submission(t: &TimeCtx, (sub, src): (&Submission, &Source), seen: &mut Seen) -> Result<()> {
    let family = sub.family()?;
    let ct = family.ct.context("no ct driver")?;
    let ops = selected(&ct, &t.opts.ops, family.noun)?;
    for inst in sub.instances.iter().filter(|i| t.inputs.selects(i)) {
        let mut reference = None;
        for op in &ops {
            let path = t.layout.ct(&sub.id, &inst.label, op.id);
            // Other steps may be writing the index: read it when it is whole.
            let mut rec = match crate::evidence::settled(|| memchecked(t.layout, &path, sub)) {
                Ok(rec) => rec,
                Err(e) => {
                    seen.failures.push(format!("{} {} {}: no timing test, {e:#}", sub.id, inst.label, op.id));
                    continue;
                }
            };
            if !timing::wanted(op, rec.status) {
                continue;
            }
            // Built once per instance, and only when some operation is timed.
            if reference.is_none() {
                reference = Some(reference_build(t, (sub, src), inst)?);
            }
            rec.timing = timing_of(t, (sub, inst, reference.as_ref().and_then(Option::as_ref)), (&ct, op), rec.status)?;
            rec.finished = project::now_utc();
            print_row(&rec);
            schema::write(&path, &rec)?;
            crate::evidence::update_index(&t.inputs.out)?;
            seen.timing(&rec);
        }
    }
    Ok(())
}

/// The memcheck part's record at `path`: the indexed file, its status following from
/// what it records; otherwise why not.
fn memchecked(layout: &Layout, path: &Utf8Path, sub: &Submission) -> Result<CtRecord> {
    let rel = layout.relative(path);
    let index = crate::evidence::read_index(&layout.out)?;
    crate::evidence::indexed(&layout.out, &index, &rel)?;
    let rec: CtRecord = schema::read(path)?.with_context(|| format!("{rel}: no memcheck record"))?;
    check_kept(&rec, sub).with_context(|| rel.clone())?;
    Ok(rec)
}

/// The records of `sub` this run keeps (other instances' or operations') are evidence
/// only while they are the indexed files and their verdicts follow from what they
/// record; any other is dropped from the set, with a warning naming it.
fn drop_unchecked(layout: &Layout, sub: &Submission, runs_now: &dyn Fn(&str, &str) -> bool) -> Result<()> {
    let root = &layout.out;
    let index = crate::evidence::read_index(root).unwrap_or_default();
    for inst in &sub.instances {
        for op in default_ops(sub) {
            let path = layout.ct(&sub.id, &inst.label, op);
            if runs_now(&inst.label, op) || !project::is_regular(&path) {
                continue;
            }
            let rel = layout.relative(&path);
            let kept = crate::evidence::indexed(root, &index, &rel).and_then(|()| {
                let rec: CtRecord = schema::read(&path)?.with_context(|| format!("{rel} vanished"))?;
                check_kept(&rec, sub)
            });
            if let Err(e) = kept {
                // A record of an older schema is no forgery: `evidence check` names it.
                if e.to_string().contains("this harness reads schema") {
                    continue;
                }
                crate::warning!(
                    "WARNING: {rel}: earlier record dropped, {e:#}; run `cargo xtask ct {} --instance {} --op {op}` \
                     to check it again",
                    sub.id,
                    inst.label
                );
                project::remove_file(&path)?;
            }
        }
    }
    Ok(())
}

/// The valgrind command line of one operation (the driver's path as the sandbox sees it).
fn memcheck_argv(program: &str, op: &str, runs: u32) -> Vec<String> {
    let words = [
        "valgrind",
        "--tool=memcheck",
        "-q",
        "--xml=yes",
        "--xml-fd=3",
        "--error-limit=no",
        "--num-callers=24",
        "--max-stackframe=20480000",
        "--vgdb=no",
    ];
    let mut argv: Vec<String> = words.iter().map(|w| (*w).to_owned()).collect();
    argv.extend([program.to_owned(), op.to_owned(), runs.to_string()]);
    argv
}

/// Run one operation and make its record.
fn record(
    ctx: &Ctx,
    (sub, inst, builds): (&Submission, &Instance, &Builds),
    (ct, op): (&CtCheck, &CtOp),
    requests: u32,
) -> Result<CtRecord> {
    let (started, build, opts) = (project::now_utc(), builds.ct, ctx.t.opts);
    let mut job = build.run_job(ctx.sb.backend, &[ct.driver.program.to_owned()], Duration::from_secs(opts.timeout_s));
    let command = memcheck_argv(&job.argv[0], op.id, opts.runs);
    // The XML goes to the sandbox's stdout through fd 3; the program's own stdout is
    // /dev/null, so a chatty library cannot break the report by accident.
    job.argv = ["/bin/sh", "-c", "exec 3>&1 >/dev/null; exec \"$0\" \"$@\""].map(String::from).into();
    job.argv.extend(command.iter().cloned());
    let t = Instant::now();
    // valgrind translates the program into executable anonymous memory of its own.
    let memcheck_sb = Sandbox { jit: true, ..ctx.sb.clone() };
    let (finished, xml) = memcheck_sb.run_captured(ctx.t.sh, &job, memcheck::MAX_XML)?;
    let wall_s = t.elapsed().as_secs_f64();
    let roots = memcheck::Roots { src: recipe::SRC, drivers: recipe::DRIVERS };
    let seen = if finished.outcome.success() {
        judge(&xml, &roots)
    } else {
        Err(format!("`{}` {}: {}", command.join(" "), finished.outcome, project::last_lines(&finished.stderr, 4)))
    };
    let derived = public_derived(sub, op.id);
    let (status, findings, public, bytes, detail) = match seen {
        Ok(j) => {
            let (findings, public) = split_public(j.findings, &derived);
            let j = Judged { findings, bytes: j.bytes };
            (j.status(), j.findings, public, j.bytes, None)
        }
        Err(why) => (CtStatus::Failed, vec![], vec![], [0; 3], Some(why)),
    };
    let (status, detail) = with_requests(status, detail, requests);
    let timing = match opts.parts {
        // The timing part completes the record.
        Parts::Memcheck => None,
        _ => timing_of(&ctx.t, (sub, inst, builds.reference), (ct, op), status)?,
    };
    let mut declassified: Vec<String> = inst.ct_public_sk.iter().map(|r| r.describe()).collect();
    declassified.extend(derived.iter().map(|d| d.describe()));
    Ok(CtRecord {
        schema: schema::version::<CtRecord>(),
        id: sub.id.clone(),
        label: inst.label.clone(),
        op: OpId::new(op.id),
        system: ctx.t.inputs.system.clone(),
        secrets: op.secrets.to_owned(),
        runs: opts.runs,
        status,
        detail,
        findings,
        public_derived: public,
        secret_bytes: bytes[0],
        random_bytes: bytes[1],
        declassified_bytes: bytes[2],
        declassified,
        client_requests: requests,
        command,
        toolchain: ctx.tc.clone(),
        analysis: ctx.layer.clone(),
        build_key: build.record.key.clone(),
        library_sha256: build.record.output_sha256(recipe::LIBRARY).context("no library")?.to_owned(),
        wall_s,
        timing,
        harness_commit: project::harness_commit(ctx.t.sh),
        started,
        finished: project::now_utc(),
    })
}

/// The timing test of `op` when its status asks for one: not run when the manifest names
/// a value public by design that its two classes also differ in.
fn timing_of(
    t: &TimeCtx,
    (sub, inst, reference): (&Submission, &Instance, Option<&std::result::Result<Build, String>>),
    (ct, op): (&CtCheck, &CtOp),
    status: CtStatus,
) -> Result<Option<CtTiming>> {
    match public_derived(sub, op.id).first() {
        Some(d) if timing::wanted(op, status) && t.opts.measurements > 0 => {
            let why = format!(
                "its two classes of secret input also differ in a value public by design ({}), whose handling may \
                 take its own time (manifest: ct_public_derived)",
                d.why
            );
            Ok(Some(timing::not_run(&why, t.opts.measurements)))
        }
        _ => time_op(t, (inst, reference), (ct, op), status),
    }
}

/// The manifest's public-derived values of `op`.
fn public_derived<'a>(sub: &'a Submission, op: &str) -> Vec<&'a PublicDerived> {
    sub.ct_public_derived.iter().filter(|d| d.op == op).collect()
}

/// Findings apart from those whose stack passes through a function of `derived`.
fn split_public(findings: Vec<CtFinding>, derived: &[&PublicDerived]) -> (Vec<CtFinding>, Vec<CtFinding>) {
    findings.into_iter().partition(|f| !in_derived(f, derived))
}

fn in_derived(f: &CtFinding, derived: &[&PublicDerived]) -> bool {
    f.stack.iter().chain([&f.at]).any(|frame| derived.iter().any(|d| d.names(&frame.function)))
}

/// An instance's builds: the constant-time variant memcheck runs, and the reference
/// build whose one program the timing test runs (None: no timing test in this run; an
/// error: why it cannot be timed).
struct Builds<'a> {
    ct: &'a Build,
    reference: Option<&'a std::result::Result<Build, String>>,
}

/// The reference build of `inst` in the toolchain image (as verify and bench build it),
/// when this run times anything.
fn reference_build(
    ctx: &TimeCtx,
    (sub, src): (&Submission, &Source),
    inst: &Instance,
) -> Result<Option<std::result::Result<Build, String>>> {
    let Some(te) = ctx.timing else { return Ok(None) };
    let bctx = BuildCtx { sh: ctx.sh, env: te.env, tc: &te.tc, sb: &te.sb, sub, src, inputs: ctx.inputs };
    let ct = sub.family()?.ct.context("no ct driver")?;
    Ok(Some(match bctx.ensure(inst)? {
        Built::Ok(b) if b.record.program_sha256(ct.driver.program).is_some() => Ok(b),
        Built::Ok(_) => Err(format!("the build's program has no ct mode: {} did not compile", ct.driver.source)),
        Built::Failed { .. } => Err("the reference build failed (see `cargo xtask verify`)".into()),
    }))
}

/// The timing test of `op`, when it gets one.
fn time_op(
    ctx: &TimeCtx,
    (inst, reference): (&Instance, Option<&std::result::Result<Build, String>>),
    (ct, op): (&CtCheck, &CtOp),
    status: CtStatus,
) -> Result<Option<CtTiming>> {
    if !timing::wanted(op, status) || ctx.opts.measurements == 0 {
        return Ok(None);
    }
    let (Some(te), Some(reference)) = (ctx.timing, reference) else {
        let why = "qemu-user emulation: its timings are not the architecture's";
        return Ok(Some(timing::not_run(why, ctx.opts.measurements)));
    };
    let build = match reference {
        Ok(b) => b,
        Err(why) => return Ok(Some(timing::not_run(why, ctx.opts.measurements))),
    };
    let _live = crate::ui::progress(format!("ct timing {} {}", inst.label, op.id), None);
    let t = timing::Timing {
        sh: ctx.sh,
        sb: &te.sb,
        runner: &te.runner,
        measurements: ctx.opts.measurements,
        timeout: Duration::from_secs(ctx.opts.timeout_s),
        budget: ctx.opts.budget.as_ref(),
    };
    timing::run(&t, build, ct.driver.program, op.id).map(Some)
}

fn timing_summary(t: &CtTiming) -> String {
    match t.status {
        CtTimingStatus::Differs | CtTimingStatus::NoneFound => {
            format!("{}: |t| = {:.1} over {} measurements ({})", t.status.as_str(), t.t.abs(), t.taken, t.test)
        }
        CtTimingStatus::Inconclusive => format!(
            "{}: |t| = {:.1} on {} measurements ({}); {}",
            t.status.as_str(),
            t.t.abs(),
            t.n[0] + t.n[1],
            t.test,
            crate::measure::stats::margin_rule()
        ),
        _ => format!("{}: {}", t.status.as_str(), t.detail.as_deref().unwrap_or("")),
    }
}

/// Client requests in the candidate's code say why a record may show nothing: a run
/// with no finding is then undetermined.
fn with_requests(status: CtStatus, detail: Option<String>, requests: u32) -> (CtStatus, Option<String>) {
    if requests == 0 {
        return (status, detail);
    }
    let note = format!(
        "the candidate's library holds {requests} valgrind client request(s): it can mark its secrets defined and hide a leak"
    );
    let status = if status == CtStatus::NoneFound { CtStatus::Undetermined } else { status };
    (status, Some(detail.map_or(note.clone(), |d| format!("{d}; {note}"))))
}

/// What a finished run's report says.
#[derive(Debug)]
struct Judged {
    findings: Vec<crate::evidence::schema::CtFinding>,
    /// Secret bytes, DRNG bytes poisoned and key bytes declassified, from the driver's line.
    bytes: [u64; 3],
}

impl Judged {
    fn status(&self) -> CtStatus {
        verdict(!self.findings.is_empty(), [self.bytes[0], self.bytes[1]])
    }
}

/// What a report holds; `Err` when it cannot be read as a whole run's.
fn judge(xml: &[u8], roots: &memcheck::Roots) -> std::result::Result<Judged, String> {
    let report = memcheck::parse(xml, roots)?;
    if !report.finished {
        return Err("memcheck's report ends before its final status".into());
    }
    let line = report
        .messages
        .iter()
        .find_map(|m| m.strip_prefix("ngcc-ct "))
        .ok_or("the driver's ngcc-ct line is missing")?;
    let field = |name: &str| -> std::result::Result<u64, String> {
        let word = line.split(' ').find_map(|w| w.strip_prefix(name).and_then(|r| r.strip_prefix('=')));
        word.and_then(|v| v.parse().ok()).ok_or_else(|| format!("the driver's line has no {name}: {line:?}"))
    };
    let bytes = [field("secret_bytes")?, field("random_bytes")?, field("declassified_bytes")?];
    Ok(Judged { findings: report.findings, bytes })
}

/// The status a finished run's findings and poisoned bytes (secret, DRNG) give.
fn verdict(findings: bool, poisoned: [u64; 2]) -> CtStatus {
    match (poisoned, findings) {
        (_, true) => CtStatus::Findings,
        ([0, 0], false) => CtStatus::NothingPoisoned,
        (_, false) => CtStatus::NoneFound,
    }
}

/// An earlier record is kept only while its status is the one its recorded findings,
/// bytes and client requests give (a failed run records none of them), and its timing
/// test's is the one its t gives, taken only when its status asks for one.
pub(crate) fn check_kept(rec: &CtRecord, sub: &Submission) -> Result<()> {
    let derived = public_derived(sub, rec.op.name());
    if let Some(f) = rec.public_derived.iter().find(|f| !in_derived(f, &derived)) {
        anyhow::bail!("it lists {}:{} as public-derived, which the manifest does not name", f.at.file, f.at.line);
    }
    let poisoned = [rec.secret_bytes, rec.random_bytes];
    let derived = with_requests(verdict(!rec.findings.is_empty(), poisoned), None, rec.client_requests).0;
    let failed = rec.findings.is_empty() && poisoned == [0, 0] && rec.declassified_bytes == 0;
    if rec.status != derived && !(rec.status == CtStatus::Failed && failed) {
        anyhow::bail!("it says {}, but its findings and bytes give {}", rec.status.as_str(), derived.as_str());
    }
    let Some(t) = &rec.timing else { return Ok(()) };
    let ct = sub.family()?.ct.context("no ct driver")?;
    let op = ct.ops.iter().find(|o| o.id == rec.op.name()).context("not an operation ct checks")?;
    if !timing::wanted(op, rec.status) {
        anyhow::bail!("it holds a timing test its status {} does not take", rec.status.as_str());
    }
    counts_hold(t).map_err(|why| anyhow::anyhow!("its timing test {why}"))?;
    let judged = match t.status {
        CtTimingStatus::NotRun | CtTimingStatus::Failed | CtTimingStatus::NotEnough => t.status,
        _ if t.threshold != crate::measure::stats::THRESHOLD => {
            anyhow::bail!("its timing test's threshold is {}, not {}", t.threshold, crate::measure::stats::THRESHOLD)
        }
        _ => crate::measure::stats::Welch { t: t.t, test: t.test.clone(), n: t.n, mean_ns: t.mean_ns }.status(),
    };
    if judged != t.status {
        anyhow::bail!(
            "its timing test says {}, but |t| = {:.2} gives {}",
            t.status.as_str(),
            t.t.abs(),
            judged.as_str()
        );
    }
    Ok(())
}

/// A timing test's status against its counts and budget: a verdict (differs, none
/// found, inconclusive) only on a whole run of at least the floor, within what its
/// budget allowed; "not enough measurements" only where a budget allowed fewer than the
/// floor or its run was stopped at the budget's limit (none taken).
fn counts_hold(t: &CtTiming) -> std::result::Result<(), String> {
    let floor = timing::MIN_MEASUREMENTS;
    if let Some(why) = t.budget.as_ref().and_then(|b| b.contradiction(floor)) {
        return Err(why);
    }
    let verdict =
        matches!(t.status, CtTimingStatus::Differs | CtTimingStatus::NoneFound | CtTimingStatus::Inconclusive);
    if verdict && (t.taken < floor || t.taken != t.asked || t.n[0] + t.n[1] > t.taken) {
        return Err(format!(
            "says {} on {} of {} measurements (a verdict needs {floor})",
            t.status.as_str(),
            t.taken,
            t.asked
        ));
    }
    match (&t.budget, t.status) {
        (Some(b), _) if verdict && (!b.enough || t.taken > b.allowed) => Err(format!(
            "says {} on {} measurements where its budget allowed {}",
            t.status.as_str(),
            t.taken,
            b.allowed
        )),
        (None, CtTimingStatus::NotEnough) => Err("says not enough measurements without a budget".into()),
        (Some(b), CtTimingStatus::NotEnough) if b.enough && t.taken > 0 => {
            Err(format!("says not enough measurements where its budget allowed {}", b.allowed))
        }
        _ => Ok(()),
    }
}

/// Valgrind's client-request preambles (amd64: four `rolq` of %rdi; arm64: four `ror` of
/// x12), which a library needs to mark memory defined or to ask whether it runs under
/// valgrind.
const PREAMBLES: [[u8; 16]; 2] = [
    [0x48, 0xc1, 0xc7, 0x03, 0x48, 0xc1, 0xc7, 0x0d, 0x48, 0xc1, 0xc7, 0x3d, 0x48, 0xc1, 0xc7, 0x33],
    [0x8c, 0x0d, 0xcc, 0x93, 0x8c, 0x35, 0xcc, 0x93, 0x8c, 0xcd, 0xcc, 0x93, 0x8c, 0xf5, 0xcc, 0x93],
];

/// The harness's own code in a ct library (`drivers/ct_random.c`).
const OWN_SYMBOLS: [&str; 1] = ["__wrap_get_random_number"];

/// Client requests in the library's code outside the harness's own wrapper.
pub fn client_requests(lib: &Utf8Path) -> Result<u32> {
    use object::{Object, ObjectSymbol};
    let data = project::read_regular(lib, 256 << 20)?;
    let elf = object::File::parse(&*data).with_context(|| format!("{lib} is not an ELF file"))?;
    let own: Vec<(u64, u64)> = elf
        .symbols()
        .filter(|s| s.name().is_ok_and(|n| OWN_SYMBOLS.contains(&n)))
        .map(|s| (s.address(), s.address() + s.size()))
        .collect();
    Ok(count_requests(&elf, &own))
}

fn count_requests(elf: &object::File, own: &[(u64, u64)]) -> u32 {
    use object::{Object, ObjectSection, SectionKind};
    let mut n = 0;
    for section in elf.sections().filter(|s| s.kind() == SectionKind::Text) {
        let Ok(bytes) = section.data() else { continue };
        for (i, w) in bytes.windows(16).enumerate() {
            let at = section.address() + i as u64;
            if PREAMBLES.iter().any(|p| w == p) && !own.iter().any(|&(a, b)| (a..b).contains(&at)) {
                n += 1;
            }
        }
    }
    n
}

fn summary(rec: &CtRecord) -> String {
    match rec.status {
        CtStatus::Findings => {
            let first = &rec.findings[0];
            format!(
                "{} finding(s), first: {} in {} at {}:{}",
                rec.findings.len(),
                first.kind.as_str(),
                first.at.function,
                first.at.file,
                first.at.line
            )
        }
        _ => rec.detail.clone().unwrap_or_else(|| rec.status.as_str().to_owned()),
    }
}

fn print_row(rec: &CtRecord) {
    crate::say!(
        "  {:<18} {:<8} {:<16} {:>4} finding(s)  {:.1} s",
        rec.label,
        rec.op.name(),
        rec.status.as_str(),
        rec.findings.len(),
        rec.wall_s
    );
    for f in rec.findings.iter().take(5) {
        crate::say!("      {} in {} at {}:{} (×{})", f.kind.as_str(), f.at.function, f.at.file, f.at.line, f.count);
    }
    if !rec.public_derived.is_empty() {
        let n = rec.public_derived.len();
        crate::say!("      {n} report(s) on values public by design, not findings (manifest: ct_public_derived)");
    }
    if let Some(t) = &rec.timing {
        crate::say!("      {}", timing_summary(t));
    }
    crate::ui::row(ResultRow {
        id: rec.id.clone(),
        instance: rec.label.clone(),
        op: Some(rec.op.name().to_owned()),
        status: rec.status.as_str().to_owned(),
        check: None,
        kat_sha256: None,
        median_ns_per_op: None,
        origin: "new".into(),
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn xml(body: &str) -> Vec<u8> {
        format!(
            "<valgrindoutput><protocoltool>memcheck</protocoltool>{body}<status><state>FINISHED</state></status></valgrindoutput>"
        )
        .into_bytes()
    }

    const ROOTS: memcheck::Roots = memcheck::Roots { src: "/src", drivers: "/drivers" };

    fn finding(stack: &[&str]) -> CtFinding {
        let frame = |f: &&str| crate::evidence::schema::CtFrame { function: (*f).into(), file: "x.c".into(), line: 1 };
        CtFinding {
            kind: crate::evidence::schema::CtKind::Branch,
            at: frame(&stack[0]),
            stack: stack.iter().map(frame).collect(),
            count: 1,
            what: String::new(),
        }
    }

    #[test]
    fn reports_under_a_public_derived_function_are_set_apart_by_name_or_prefixed_name() {
        let d = PublicDerived { op: "keygen".into(), functions: vec!["gen_matrix".into()], why: "rho".into() };
        let found = vec![
            finding(&["rej_uniform", "PQCLEAN_MLKEM512_CLEAN_gen_matrix", "indcpa_keypair"]),
            finding(&["poly_getnoise", "indcpa_keypair"]),
            finding(&["my_gen_matrix_fast", "keypair"]),
            finding(&["gen_matrix"]),
        ];
        let (kept, public) = split_public(found, &[&d]);
        let at = |v: &[CtFinding]| v.iter().map(|f| f.at.function.clone()).collect::<Vec<_>>();
        assert_eq!(at(&kept), ["poly_getnoise", "my_gen_matrix_fast"], "only whole names or `_` prefixes");
        assert_eq!(at(&public), ["rej_uniform", "gen_matrix"]);
        assert_eq!(d.describe(), "keygen: values derived in gen_matrix (rho)");
    }

    #[test]
    fn a_status_needs_the_drivers_line_and_something_poisoned() {
        let line = |s, r| {
            format!(
                "<clientmsg><text>ngcc-ct op=keygen runs=4 secret_bytes={s} random_bytes={r} declassified_bytes=0</text></clientmsg>"
            )
        };
        assert_eq!(judge(&xml(&line(0, 128)), &ROOTS).unwrap().status(), CtStatus::NoneFound);
        assert_eq!(judge(&xml(&line(0, 0)), &ROOTS).unwrap().status(), CtStatus::NothingPoisoned);
        let error = "<error><unique>0x0</unique><kind>UninitCondition</kind><what>c</what><stack><frame><ip>0x1</ip><fn>f</fn><dir>/src</dir><file>a.c</file><line>7</line></frame></stack></error>";
        let j = judge(&xml(&format!("{error}{}", line(0, 0))), &ROOTS).unwrap();
        assert_eq!((j.status(), j.findings[0].at.line), (CtStatus::Findings, 7));
        // No line (the run ended before the driver's report), or a line without its counts.
        assert!(judge(&xml(""), &ROOTS).unwrap_err().contains("ngcc-ct line"));
        let bad = "<clientmsg><text>ngcc-ct op=keygen runs=4</text></clientmsg>";
        assert!(judge(&xml(bad), &ROOTS).unwrap_err().contains("secret_bytes"));
    }

    #[test]
    fn operations_are_the_familys_secret_handling_ones() {
        let kem = crate::family::KEM.ct.unwrap();
        let ids = |ops: Vec<CtOp>| ops.iter().map(|o| o.id).collect::<Vec<_>>();
        assert_eq!(ids(selected(&kem, &[], "KEM").unwrap()), ["keygen", "enc", "dec"]);
        assert_eq!(ids(selected(&kem, &["dec".into()], "KEM").unwrap()), ["dec"]);
        let e = selected(&kem, &["verify".into()], "KEM").unwrap_err().to_string();
        assert!(e.contains("keygen, enc, dec"), "{e}");
    }

    /// What a hostile record would claim: a verdict on fewer measurements than the floor,
    /// or than its budget allowed, or "not enough" where the budget allowed enough.
    #[test]
    fn a_kept_timing_tests_status_must_follow_from_its_counts_and_budget() {
        let golden = crate::project::root().join("xtask/tests/golden/ct_record.json");
        let r: CtRecord = crate::evidence::schema::read(&golden).unwrap().unwrap();
        let t = r.timing.unwrap();
        assert!(counts_hold(&t).is_ok(), "{:?}", counts_hold(&t));
        let why = |edit: &dyn Fn(&mut CtTiming)| {
            let mut f = t.clone();
            edit(&mut f);
            counts_hold(&f).unwrap_err()
        };
        let few = |f: &mut CtTiming| {
            (f.asked, f.taken, f.n) = (1000, 1000, [490, 490]);
        };
        assert!(why(&few).contains("a verdict needs 2000"), "{}", why(&few));
        assert!(why(&|f| f.taken = f.asked - 1).contains("a verdict needs"));
        let b = TimeBudget::given(Duration::from_secs(600));
        let enough = crate::evidence::schema::Budget::of(&b, 1e6, (t.taken, 0), timing::MIN_MEASUREMENTS);
        let budgeted = CtTiming { budget: Some(enough.clone()), ..t.clone() };
        assert!(counts_hold(&budgeted).is_ok(), "{:?}", counts_hold(&budgeted));
        let short = crate::evidence::schema::Budget::of(&b, 1e9, (590, 0), timing::MIN_MEASUREMENTS);
        let e = counts_hold(&CtTiming { budget: Some(short.clone()), ..t.clone() }).unwrap_err();
        assert!(e.contains("its budget allowed 590"), "{e}");
        let lied = crate::evidence::schema::Budget { enough: true, ..short.clone() };
        assert!(counts_hold(&CtTiming { budget: Some(lied), ..t.clone() }).unwrap_err().contains("says enough"));
        // Not enough: with a budget that allowed too few, or a run stopped at its limit.
        let not_enough =
            |budget| CtTiming { status: CtTimingStatus::NotEnough, taken: 0, t: 0.0, n: [0, 0], budget, ..t.clone() };
        assert!(counts_hold(&not_enough(Some(short))).is_ok());
        let stopped = crate::evidence::schema::Budget { allowed: 0, enough: false, ..enough.clone() };
        assert!(counts_hold(&not_enough(Some(stopped))).is_ok());
        assert!(counts_hold(&not_enough(None)).unwrap_err().contains("without a budget"));
        let whole = CtTiming { taken: t.taken, ..not_enough(Some(enough)) };
        assert!(counts_hold(&whole).unwrap_err().contains("allowed 20000"));
    }

    /// The timing part completes only a record the memcheck part left as it was indexed,
    /// whose status follows from what it records.
    #[test]
    fn the_timing_part_reads_only_the_indexed_memcheck_record() {
        let t = tempfile::tempdir().unwrap();
        let out = Utf8Path::from_path(t.path()).unwrap();
        let layout = Layout::new(out, "local");
        let sub = Submission::load("pqclean-ml-kem").unwrap();
        let path = layout.ct(&sub.id, "ML-KEM-512", "dec");
        assert!(memchecked(&layout, &path, &sub).is_err(), "no record yet");
        let golden = project::root().join("xtask/tests/golden/ct_record.json");
        let mut rec: CtRecord = schema::read(&golden).unwrap().unwrap();
        (rec.id, rec.label, rec.op, rec.timing) = (sub.id.clone(), "ML-KEM-512".into(), OpId::new("dec"), None);
        schema::write(&path, &rec).unwrap();
        crate::evidence::write_index(out).unwrap();
        let kept = memchecked(&layout, &path, &sub).unwrap();
        assert_eq!((kept.status, kept.timing.is_none()), (rec.status, true));
        // A status its findings do not give, edited in since: refused, naming the file.
        rec.status = if rec.findings.is_empty() { CtStatus::Findings } else { CtStatus::NoneFound };
        schema::write(&path, &rec).unwrap();
        let e = format!("{:#}", memchecked(&layout, &path, &sub).unwrap_err());
        assert!(e.contains("__dec.json"), "{e}");
        crate::evidence::write_index(out).unwrap();
        let e = format!("{:#}", memchecked(&layout, &path, &sub).unwrap_err());
        assert!(e.contains("its findings and bytes give"), "indexed, yet inconsistent: {e}");
    }

    #[test]
    fn the_memcheck_line_keeps_the_drivers_words() {
        let argv = memcheck_argv("/build/kem_ct", "dec", 4);
        assert_eq!(argv[..2], ["valgrind", "--tool=memcheck"]);
        assert_eq!(argv[argv.len() - 3..], ["/build/kem_ct", "dec", "4"]);
        assert!(argv.contains(&"--xml-fd=3".to_owned()) && argv.contains(&"--error-limit=no".to_owned()));
    }
}
