//! `cargo xtask sanitize`: each instance built with AddressSanitizer and
//! UndefinedBehaviorSanitizer (`recipe::sanitize_plan`) in the toolchain's own image,
//! its KAT and its family's checks (the replay, the verify contract, the tampered
//! inputs) run under them, the KAT digest still checked, every report read into a
//! finding (`report`), one record per instance.
//!
//! What the tool trusts: the runtimes halt at their first report and exit with the
//! tool's own code ([`EXIT_CODE`], set in the environment, which outranks a
//! candidate's `__asan_default_options`); only a run that ends with that code is read
//! for a report, and one that does without a readable report is a failure, never clean.
//! Text the candidate prints (a fake report, a fake "no errors") cannot make a run
//! clean: clean is exit 0, the published digest and the checks holding. A candidate's
//! code shares its process with the runtimes and can still silence them (its own hooks,
//! `no_sanitize`): what the build shows of that is listed (`hooks`) and makes a run
//! without findings `undetermined`.
//!
//! Not under qemu-user: ASan's shadow memory does not map under emulation, so an
//! emulated architecture is refused before any engine call.

pub mod report;

use std::cell::RefCell;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use sha2::Sha256;
use xshell::Shell;

use crate::compile::builder::{Build, BuildCtx, Built, RunCtx};
use crate::compile::options::Inputs;
use crate::compile::recipe;
use crate::compile::sources::Source;
use crate::compile::submission::{Instance, Submission};
use crate::container::sandbox::{Finished, Job, Outcome, Sandbox};
use crate::evidence::schema::{
    self, Check, ResultRow, SanFinding, SanRun, SanRunVerdict, SanStatus, SanitizeRecord, ToolchainRecord,
};
use crate::evidence::Layout;
use crate::family::{CheckCtx, Corroboration, RunProgram};
use crate::kat::{Canonical, Manifest};
use crate::project;

/// The exit code the runtimes are given: a run that ends with it was stopped by a
/// sanitizer (or says so falsely, which only fails it).
pub const EXIT_CODE: i32 = 86;

/// How much longer than its KAT time limit a run may take under the sanitizers.
pub const SLOWDOWN: u64 = 4;

/// The runtimes' options, set in each run's environment. ASan and UBSan halt at their
/// first report with [`EXIT_CODE`] and write it to stderr; leak detection is off (it
/// needs ptrace, which the sandbox does not grant); the candidate cannot poison or
/// unpoison memory by hand.
pub fn options() -> [String; 2] {
    let common = format!("halt_on_error=1:exitcode={EXIT_CODE}:log_path=stderr:color=never:symbolize=1");
    [
        format!(
            "ASAN_OPTIONS={common}:abort_on_error=0:detect_leaks=0:handle_segv=1:handle_abort=0:\
             allow_user_poisoning=0:poison_heap=1:replace_intrin=1:detect_stack_use_after_return=0"
        ),
        format!("UBSAN_OPTIONS={common}:print_stacktrace=1:report_error_type=1"),
    ]
}

/// `sanitize`: its inputs and options; the defaults live here.
#[derive(Debug, Clone)]
pub struct Sanitize {
    pub inputs: Inputs,
    /// Wall-time limit of one run, in seconds; None: the instance's KAT limit × [`SLOWDOWN`].
    pub timeout: Option<u64>,
}

/// What a run saw, one line per instance.
#[derive(Debug, Default)]
pub struct Seen {
    pub findings: Vec<String>,
    /// Mismatch or undetermined: recorded facts without a finding.
    pub open: Vec<String>,
    /// Failed runs and failed builds.
    pub failures: Vec<String>,
}

impl Sanitize {
    pub fn run(self, sh: &Shell) -> Result<()> {
        if let Some(why) = self.refusal()? {
            return crate::ui::usage(why);
        }
        let run = self.inputs.prepare(sh, check)?;
        let seen = self.sanitize_all(sh, &run.ctx, &run.work)?;
        let all: Vec<String> = seen.failures.iter().chain(&seen.open).chain(&seen.findings).cloned().collect();
        crate::ui::report("sanitize", (&self.inputs.system, &self.inputs.out), &all)?;
        if !all.is_empty() {
            return Err(crate::ui::Findings(format!("sanitizer findings or failures:\n  {}", all.join("\n  "))).into());
        }
        Ok(())
    }

    /// Why these inputs cannot be run under the sanitizers, known before any engine
    /// call: an emulated architecture, or the host backend.
    pub fn refusal(&self) -> Result<Option<String>> {
        let profile = crate::container::systems::SystemProfile::load(&self.inputs.system)?;
        let arch = profile.arch(self.inputs.target.arch);
        Ok(refusal(arch, self.inputs.target.engine))
    }

    /// Run every submission of `work` in `run`'s toolchain image.
    pub fn sanitize_all(&self, sh: &Shell, run: &RunCtx, work: &[(Submission, Source)]) -> Result<Seen> {
        let sb = run.env.sandbox(self.inputs.limits());
        let tc = run.env.record(sh, &sb)?;
        if tc.emulated {
            return crate::ui::usage(format!("sanitize: {}", QEMU));
        }
        let mut seen = Seen::default();
        for (sub, src) in work {
            let ctx = Ctx { sh, me: self, env: &run.env, sb: &sb, tc: &tc, layout: &run.layout };
            ctx.submission(sub, src, &mut seen)?;
        }
        crate::evidence::reindex(&self.inputs.out)?;
        Ok(seen)
    }
}

/// Why the sanitizers do not run on `arch` with `engine`.
pub fn refusal(arch: crate::evidence::domain::Arch, engine: crate::evidence::domain::EngineChoice) -> Option<String> {
    if !crate::container::emulation::native(arch) {
        return Some(format!("sanitize --arch {}: {QEMU}", arch.names()[0]));
    }
    (engine == crate::evidence::domain::EngineChoice::Host)
        .then(|| "sanitize runs in the pinned image only: not on --engine host".to_owned())
}

/// What qemu-user cannot do.
pub const QEMU: &str = "AddressSanitizer does not run under qemu-user emulation (its shadow memory does not map \
                        there), so an emulated run would report nothing true; run it on a machine of that \
                        architecture";

/// `sub` has a sanitizer variant (a usage error before any engine call if not).
pub fn check(sub: &Submission) -> Result<()> {
    match recipe::sanitize_refusal(sub) {
        Some(why) => crate::ui::usage(why),
        None => Ok(()),
    }
}

/// Whether `sanitize` can run `sub` (a campaign adds the step only then).
pub fn applies(sub: &Submission) -> bool {
    recipe::sanitize_refusal(sub).is_none()
}

struct Ctx<'a> {
    sh: &'a Shell,
    me: &'a Sanitize,
    env: &'a crate::compile::builder::BuildEnv,
    sb: &'a Sandbox,
    tc: &'a ToolchainRecord,
    layout: &'a Layout,
}

impl Ctx<'_> {
    fn submission(&self, sub: &Submission, src: &Source, seen: &mut Seen) -> Result<()> {
        let manifest = Manifest::of(sub, &sub.kat_manifest_path())?;
        let inputs = &self.me.inputs;
        let bctx = BuildCtx { sh: self.sh, env: self.env, tc: self.tc, sb: self.sb, sub, src, inputs };
        crate::say!("{} ({}): ASan and UBSan builds ({})", sub.id, sub.name, recipe::SANITIZE_FLAGS.join(" "));
        for inst in sub.instances.iter().filter(|i| inputs.selects(i)) {
            let _live = crate::ui::progress(format!("sanitize {} {}", sub.id, inst.label), None);
            let build = match bctx.ensure_sanitized(inst)? {
                Built::Ok(b) => b,
                Built::Failed { log, .. } => {
                    // An earlier record speaks for another build: it goes.
                    let old = self.layout.sanitize(&sub.id, &inst.label);
                    if project::is_regular(&old) {
                        project::remove_file(&old)?;
                    }
                    let last = project::last_lines(&log, 6);
                    let line = format!("{} {}: the sanitizer build failed:\n{last}", sub.id, inst.label);
                    seen.failures.push(line);
                    continue;
                }
            };
            let rec = self.instance(sub, src, inst, &build, &manifest)?;
            print_row(&rec);
            schema::write(&self.layout.sanitize(&sub.id, &inst.label), &rec)?;
            crate::evidence::update_index(&inputs.out)?;
            let line = format!("{} {}: {}", sub.id, inst.label, summary(&rec));
            match rec.status {
                SanStatus::Clean => {}
                SanStatus::Findings => seen.findings.push(line),
                SanStatus::Mismatch | SanStatus::Undetermined => seen.open.push(line),
                SanStatus::Failed => seen.failures.push(line),
            }
        }
        Ok(())
    }

    fn instance(
        &self,
        sub: &Submission,
        src: &Source,
        inst: &Instance,
        build: &Build,
        manifest: &Manifest,
    ) -> Result<SanitizeRecord> {
        let started = project::now_utc();
        let family = sub.family()?;
        let sb = Sandbox { limits: self.me.inputs.limits_for(inst), ..self.sb.clone() };
        let timeout =
            Duration::from_secs(self.me.timeout.unwrap_or(Inputs::kat_timeout(None, inst).saturating_mul(SLOWDOWN)));
        let runs =
            Runs { sh: self.sh, sb: &sb, build, timeout, name: RefCell::new(String::new()), done: RefCell::default() };
        let files = sub.kat_files(inst)?;
        for (part, file) in &files {
            let name = if part.id.is_empty() { "kat".to_owned() } else { format!("kat {}", part.id) };
            crate::ui::doing(name.clone());
            let mut argv = build.record.plan.run.clone();
            argv.extend((!part.id.is_empty()).then(|| part.id.to_owned()));
            runs.kat(&name, &argv, manifest.entry(&inst.label, file))?;
        }
        let mut checks = Vec::new();
        let corroborations: [Option<&Corroboration>; 2] =
            [family.corroborates(&build.record), family.tampers(&build.record)];
        for check in corroborations.into_iter().flatten() {
            crate::ui::doing(check.name);
            *runs.name.borrow_mut() = check.name.to_owned();
            checks.push((check.run)(&CheckCtx { runs: &runs })?);
        }
        let hooks = hooks(build, src)?;
        let runs = runs.done.into_inner();
        let findings = findings(&runs);
        let (status, detail) = status(&runs, &checks, &hooks);
        Ok(SanitizeRecord {
            schema: schema::version::<SanitizeRecord>(),
            id: sub.id.clone(),
            label: inst.label.clone(),
            system: self.me.inputs.system.clone(),
            status,
            detail,
            flags: recipe::SANITIZE_FLAGS.map(String::from).into(),
            options: options().into(),
            exit_code: EXIT_CODE,
            runs: runs.into_iter().map(|(r, _)| r).collect(),
            checks,
            findings,
            hooks,
            toolchain: self.tc.clone(),
            build_key: build.record.key.clone(),
            library_sha256: build.record.output_sha256(recipe::LIBRARY).context("no library")?.to_owned(),
            harness_commit: project::harness_commit(self.sh),
            started,
            finished: project::now_utc(),
        })
    }
}

/// The runs of one instance's sanitizer build, each with the runtimes' options in its
/// environment; what each saw is kept with the report it left.
struct Runs<'a> {
    sh: &'a Shell,
    sb: &'a Sandbox,
    build: &'a Build,
    timeout: Duration,
    /// The check whose programs run now.
    name: RefCell<String>,
    done: RefCell<Vec<(SanRun, Option<report::Report>)>>,
}

impl Runs<'_> {
    /// The job of `argv` with the options set: `env NAME=VALUE... <program>`.
    fn job(&self, argv: &[String], stdin: &[u8]) -> (Job, Vec<String>) {
        let mut job = self.build.run_job(self.sb.backend, argv, self.timeout);
        job.stdin = Some([job.stdin.take().unwrap_or_default(), stdin.to_vec()].concat());
        let mut wrapped = vec!["/usr/bin/env".to_owned()];
        wrapped.extend(options());
        let mut command = wrapped.clone();
        command.extend(self.build.command(self.sb.backend, argv));
        wrapped.append(&mut job.argv);
        job.argv = wrapped;
        (job, command)
    }

    /// A KAT run: its text into the canonical digest (nothing kept), held against the
    /// published line when there is one.
    fn kat(&self, name: &str, argv: &[String], entry: Option<&crate::kat::Entry>) -> Result<()> {
        let (job, command) = self.job(argv, b"");
        let mode = entry.map_or(crate::kat::Mode::Strict, |e| e.mode);
        let mut canonical = Canonical::new(mode, entry.and_then(|e| e.records), Sha256::default());
        let t = Instant::now();
        let f = self.sb.run(self.sh, &job, &mut canonical)?;
        let (mut run, report) = judge_run(name, command, &f, t.elapsed());
        if run.verdict == SanRunVerdict::Clean {
            match entry {
                None => run.detail = Some("no line in kat.sha256: the digest is not checked".into()),
                Some(e) => {
                    let actual = crate::kat::finish_digest(canonical);
                    run.expected_sha256 = Some(e.sha256.to_string());
                    match actual {
                        Ok(a) if e.sha256 == *a => run.actual_sha256 = Some(a),
                        Ok(a) => {
                            run.verdict = SanRunVerdict::Mismatch;
                            run.detail =
                                Some("the KAT text differs from the published one under the sanitizers".into());
                            run.actual_sha256 = Some(a);
                        }
                        Err(why) => {
                            run.verdict = SanRunVerdict::Mismatch;
                            run.detail = Some(format!("no digest: {why}"));
                        }
                    }
                }
            }
        }
        self.done.borrow_mut().push((run, report));
        Ok(())
    }
}

impl RunProgram for Runs<'_> {
    fn run(&self, argv: &[String], stdin: &[u8], cap: u64) -> Result<std::result::Result<Vec<u8>, String>> {
        let (job, command) = self.job(argv, stdin);
        let sb = Sandbox {
            limits: crate::evidence::domain::Limits {
                output_cap_bytes: cap.min(self.sb.limits.output_cap_bytes),
                ..self.sb.limits.clone()
            },
            ..self.sb.clone()
        };
        let t = Instant::now();
        let (f, out) = sb.run_captured(self.sh, &job, cap)?;
        let name = self.name.borrow().clone();
        let (run, report) = judge_run(&name, command, &f, t.elapsed());
        let failed = (!f.outcome.success())
            .then(|| format!("`{}` {}: {}", argv.join(" "), f.outcome, project::last_lines(&f.stderr, 4)));
        self.done.borrow_mut().push((run, report));
        Ok(match failed {
            Some(why) => Err(why),
            None => Ok(out),
        })
    }
}

/// Where a sanitizer build sees the tree and the drivers.
const ROOTS: report::Roots = report::Roots { src: recipe::SRC, drivers: recipe::DRIVERS };

/// What one finished run says: its verdict from its exit (the report read only after
/// the sanitizers' own exit code), and the report.
fn judge_run(name: &str, command: Vec<String>, f: &Finished, wall: Duration) -> (SanRun, Option<report::Report>) {
    let read = report::parse(&f.stderr, &ROOTS);
    let (verdict, detail, report) = match f.outcome {
        Outcome::Exited(EXIT_CODE) => match read.report {
            Some(r) => {
                let more = (read.headers > 1).then(|| {
                    format!(
                        "{} report headers on stderr; a halting sanitizer writes one: the last is taken",
                        read.headers
                    )
                });
                (SanRunVerdict::Report, more, Some(r))
            }
            None => (
                SanRunVerdict::Unreadable,
                Some(format!(
                    "exit status {EXIT_CODE} (the sanitizers' exit code) and no report that names a place on stderr: \
                     not clean; stderr ends:\n{}",
                    project::last_lines(&f.stderr, 6)
                )),
                None,
            ),
        },
        Outcome::Exited(0) => {
            let note = (read.headers > 0).then(|| {
                format!(
                    "{} report-like header(s) on stderr with exit 0: the program's own text (the runtimes halt)",
                    read.headers
                )
            });
            (SanRunVerdict::Clean, note, None)
        }
        other => (SanRunVerdict::Failed, Some(format!("{other}: {}", project::last_lines(&f.stderr, 6))), None),
    };
    let run = SanRun {
        run: name.to_owned(),
        command,
        outcome: f.outcome,
        wall_s: wall.as_secs_f64(),
        verdict,
        detail,
        expected_sha256: None,
        actual_sha256: None,
    };
    (run, report)
}

/// Distinct findings (by runtime, kind and place), each with the runs that met it.
fn findings(runs: &[(SanRun, Option<report::Report>)]) -> Vec<SanFinding> {
    let mut out: Vec<SanFinding> = Vec::new();
    for (run, rep) in runs {
        let Some(r) = rep else { continue };
        if let Some(f) = out.iter_mut().find(|f| f.sanitizer == r.sanitizer && f.kind == r.kind && f.at == r.at) {
            if !f.runs.contains(&run.run) {
                f.runs.push(run.run.clone());
            }
            continue;
        }
        out.push(SanFinding {
            sanitizer: r.sanitizer.to_owned(),
            kind: r.kind.clone(),
            what: r.what.clone(),
            at: r.at.clone(),
            entry: r.entry.clone(),
            runs: vec![run.run.clone()],
            stack: r.stack.clone(),
        });
    }
    out
}

/// The instance's status from its runs, checks and hooks (the first that applies:
/// a report, a failed or unreadable run, a difference, a hook, else clean).
pub fn status(
    runs: &[(SanRun, Option<report::Report>)],
    checks: &[Check],
    hooks: &[String],
) -> (SanStatus, Option<String>) {
    let has = |v: SanRunVerdict| runs.iter().any(|(r, _)| r.verdict == v);
    let first = |v: SanRunVerdict| {
        runs.iter()
            .find(|(r, _)| r.verdict == v)
            .map(|(r, _)| format!("{}: {}", r.run, r.detail.as_deref().unwrap_or("")))
    };
    let hooks_note = (!hooks.is_empty())
        .then(|| format!("the candidate's code can change what the sanitizers report: {}", hooks.join("; ")));
    if has(SanRunVerdict::Report) {
        return (SanStatus::Findings, hooks_note);
    }
    if let Some(d) = first(SanRunVerdict::Unreadable).or_else(|| first(SanRunVerdict::Failed)) {
        return (SanStatus::Failed, Some(d));
    }
    if let Some(d) = first(SanRunVerdict::Mismatch) {
        return (SanStatus::Mismatch, Some(d));
    }
    if let Some(c) = checks.iter().find(|c| !c.holds()) {
        return (SanStatus::Mismatch, Some(format!("{} under the sanitizers: {}", c.check, c.detail)));
    }
    if runs.is_empty() {
        return (SanStatus::Failed, Some("nothing ran".into()));
    }
    match hooks_note {
        Some(n) => (SanStatus::Undetermined, Some(n)),
        None => (SanStatus::Clean, None),
    }
}

/// Prefixes of the runtimes' interface: a definition in a build output is a hook.
const PREFIXES: [&str; 4] = ["__asan_", "__ubsan_", "__sanitizer_", "__lsan_"];

/// Interface functions that change what is reported or where, which instrumentation
/// never calls: a call in a build output is a hook.
const CALLS: [&str; 12] = [
    "__asan_poison_memory_region",
    "__asan_unpoison_memory_region",
    "__asan_set_error_report_callback",
    "__asan_set_death_callback",
    "__asan_on_error",
    "__sanitizer_set_death_callback",
    "__sanitizer_set_report_path",
    "__sanitizer_set_report_fd",
    "__sanitizer_install_malloc_and_free_hooks",
    "__lsan_disable",
    "__lsan_ignore_object",
    "__ubsan_on_report",
];

/// Words in a source file the build read that switch instrumentation off.
const SOURCE_WORDS: [&str; 3] = ["no_sanitize", "no_address_safety_analysis", "disable_sanitizer_instrumentation"];

/// What in the build's outputs and the sources it read can change the reports.
fn hooks(build: &Build, src: &Source) -> Result<Vec<String>> {
    let mut found = Vec::new();
    for (name, kind) in &build.record.files {
        if !kind.starts_with("file ") {
            continue;
        }
        let data = project::read_regular(&build.out.join(name), 256 << 20)?;
        found.extend(elf_hooks(&data).into_iter().map(|h| format!("{name} {h}")));
    }
    for rel in build.record.inputs.keys() {
        let Ok(data) = project::read_regular(&src.root.join(rel), 16 << 20) else { continue };
        let text = String::from_utf8_lossy(&data);
        for (n, line) in text.lines().enumerate() {
            if let Some(w) = SOURCE_WORDS.iter().find(|w| line.contains(*w)) {
                found.push(format!("{rel}:{} says {w}", n + 1));
            }
        }
    }
    found.truncate(64);
    Ok(found)
}

/// The hooks an ELF file defines or calls (nothing for a file that is not ELF).
fn elf_hooks(data: &[u8]) -> Vec<String> {
    use object::{Object, ObjectSymbol};
    let Ok(elf) = object::File::parse(data) else { return vec![] };
    let mut found = Vec::new();
    for s in elf.symbols().chain(elf.dynamic_symbols()) {
        let Ok(name) = s.name() else { continue };
        let hook = if s.is_undefined() {
            CALLS.contains(&name).then(|| format!("calls {name}"))
        } else {
            (s.is_global() && PREFIXES.iter().any(|p| name.starts_with(p))).then(|| format!("defines {name}"))
        };
        if let Some(h) = hook.filter(|h| !found.contains(h)) {
            found.push(h);
        }
    }
    found
}

fn summary(rec: &SanitizeRecord) -> String {
    match rec.findings.first() {
        Some(f) => format!(
            "{} finding(s), first: {} {} at {}:{} in {}",
            rec.findings.len(),
            f.sanitizer,
            f.kind,
            f.at.file,
            f.at.line,
            f.entry.as_deref().unwrap_or(&f.at.function)
        ),
        None => rec.detail.clone().unwrap_or_else(|| rec.status.as_str().to_owned()),
    }
}

fn print_row(rec: &SanitizeRecord) {
    let wall: f64 = rec.runs.iter().map(|r| r.wall_s).sum();
    crate::say!(
        "  {:<18} {:<13} {:>3} finding(s)  {} run(s)  {:.1} s",
        rec.label,
        rec.status.as_str(),
        rec.findings.len(),
        rec.runs.len(),
        wall
    );
    for f in rec.findings.iter().take(5) {
        crate::say!(
            "      {} {}: {} at {}:{} in {} (entry {}; {})",
            f.sanitizer,
            f.kind,
            f.what,
            f.at.file,
            f.at.line,
            f.at.function,
            f.entry.as_deref().unwrap_or("?"),
            f.runs.join(", ")
        );
    }
    if rec.status != SanStatus::Findings {
        if let Some(d) = &rec.detail {
            crate::say!("      {}", project::last_lines(d, 4));
        }
    }
    crate::ui::row(ResultRow {
        id: rec.id.clone(),
        instance: rec.label.clone(),
        op: None,
        status: rec.status.as_str().to_owned(),
        check: None,
        kat_sha256: None,
        median_ns_per_op: None,
        origin: "new".into(),
    });
}

/// The records of `sub` in `layout`, for pages.
pub fn records(layout: &Layout, sub: &Submission) -> Result<Vec<SanitizeRecord>> {
    let mut out = Vec::new();
    for inst in &sub.instances {
        out.extend(schema::read::<SanitizeRecord>(&layout.sanitize(&sub.id, &inst.label))?);
    }
    Ok(out)
}

/// Whether every instance of `sub` has a record that [`check_kept`] keeps (a campaign's
/// `--resume`); one it does not is said, and the step runs again.
pub fn done(layout: &Layout, sub: &Submission) -> bool {
    sub.instances.iter().all(|i| {
        let path = layout.sanitize(&sub.id, &i.label);
        if !project::is_regular(&path) {
            return false;
        }
        let kept = schema::read::<SanitizeRecord>(&path)
            .and_then(|r| r.context("vanished"))
            .and_then(|r| check_kept(&r, sub, i));
        kept.map_err(|e| {
            crate::warning!("WARNING: {}: earlier result not kept, {e:#}; the step runs again", layout.relative(&path))
        })
        .is_ok()
    })
}

/// An earlier record is kept only while it is this instance's, made with the tool's
/// sanitizer settings, each run's verdict is the one its exit and digests give (the
/// published digest the one `kat.sha256` gives now), its findings are the reports of
/// its runs, its checks are the family's, and its status is the one its runs, checks
/// and hooks give.
pub(crate) fn check_kept(rec: &SanitizeRecord, sub: &Submission, inst: &Instance) -> Result<()> {
    if rec.id != sub.id || rec.label != inst.label {
        anyhow::bail!("it is the record of {} {}", rec.id, rec.label);
    }
    if rec.exit_code != EXIT_CODE || rec.flags != recipe::SANITIZE_FLAGS || rec.options != options() {
        anyhow::bail!("it was made with other sanitizer settings than this tool's");
    }
    let family = sub.family()?;
    let names: Vec<&str> = [family.corroboration, family.tampered].iter().flatten().map(|c| c.name).collect();
    if let Some(c) = rec.checks.iter().find(|c| !names.contains(&c.check.as_str())) {
        anyhow::bail!("it holds a check `{}` that a {} does not run", c.check, family.noun);
    }
    let manifest = Manifest::of(sub, &sub.kat_manifest_path())?;
    for run in &rec.runs {
        kept_run(run, sub, inst, &manifest)?;
    }
    let reported: Vec<&str> =
        rec.runs.iter().filter(|r| r.verdict == SanRunVerdict::Report).map(|r| r.run.as_str()).collect();
    if rec.findings.is_empty() != reported.is_empty() {
        anyhow::bail!("it has {} finding(s) but {} run(s) stopped with a report", rec.findings.len(), reported.len());
    }
    if let Some(f) =
        rec.findings.iter().find(|f| f.runs.is_empty() || f.runs.iter().any(|r| !reported.contains(&r.as_str())))
    {
        anyhow::bail!("a finding at {}:{} names runs that left no report", f.at.file, f.at.line);
    }
    let runs: Vec<(SanRun, Option<report::Report>)> = rec.runs.iter().map(|r| (r.clone(), None)).collect();
    let (status, detail) = status(&runs, &rec.checks, &rec.hooks);
    if (status, &detail) != (rec.status, &rec.detail) {
        anyhow::bail!("it says {}, but its runs, checks and hooks give {}", rec.status.as_str(), status.as_str());
    }
    Ok(())
}

/// One kept run: its verdict is the one its exit gives, and a KAT run's the one its
/// digests give, against the published digest of now.
fn kept_run(run: &SanRun, sub: &Submission, inst: &Instance, manifest: &Manifest) -> Result<()> {
    let fits = match run.verdict {
        SanRunVerdict::Clean | SanRunVerdict::Mismatch => run.outcome == Outcome::Exited(0),
        SanRunVerdict::Report | SanRunVerdict::Unreadable => run.outcome == Outcome::Exited(EXIT_CODE),
        SanRunVerdict::Failed => !matches!(run.outcome, Outcome::Exited(0) | Outcome::Exited(EXIT_CODE)),
    };
    if !fits {
        anyhow::bail!("its run `{}` ended {} but says {:?}", run.run, run.outcome, run.verdict);
    }
    let Some(part) = run.run.strip_prefix("kat").map(str::trim) else { return Ok(()) };
    let file = sub.kat_files(inst)?.into_iter().find(|(p, _)| p.id == part).map(|(_, f)| f);
    let file = file.with_context(|| format!("its run `{}` is no KAT part of this family", run.run))?;
    let published = manifest.entry(&inst.label, &file).map(|e| e.sha256.to_string());
    if run.expected_sha256.is_some() && run.expected_sha256 != published {
        anyhow::bail!("its run `{}` was held against another digest than kat.sha256 gives now", run.run);
    }
    let equal = run.expected_sha256.is_some() && run.expected_sha256 == run.actual_sha256;
    match run.verdict {
        SanRunVerdict::Clean if published.is_some() && !equal => {
            anyhow::bail!("its run `{}` says clean, but its digest is not the published one", run.run)
        }
        SanRunVerdict::Mismatch if equal => {
            anyhow::bail!("its run `{}` says mismatch, but its digest is the published one", run.run)
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::domain::{Arch, EngineChoice};

    /// A clean record of the embedded ML-KEM-512 as `sanitize` writes one.
    fn clean_record(sub: &Submission) -> SanitizeRecord {
        let inst = &sub.instances[0];
        let manifest = Manifest::of(sub, &sub.kat_manifest_path()).unwrap();
        let file = sub.kat_files(inst).unwrap().remove(0).1;
        let digest = manifest.entry(&inst.label, &file).unwrap().sha256.to_string();
        let golden: schema::Summary = serde_json::from_str(include_str!("../../tests/golden/summary.json")).unwrap();
        let mut kat = san_run("kat", SanRunVerdict::Clean, Outcome::Exited(0));
        (kat.expected_sha256, kat.actual_sha256) = (Some(digest.clone()), Some(digest));
        let check = |name: &str| Check {
            check: name.into(),
            seeds: vec![],
            verdict: crate::evidence::schema::CheckVerdict::Holds,
            detail: String::new(),
        };
        SanitizeRecord {
            schema: schema::version::<SanitizeRecord>(),
            id: sub.id.clone(),
            label: inst.label.clone(),
            system: "local".into(),
            status: SanStatus::Clean,
            detail: None,
            flags: recipe::SANITIZE_FLAGS.map(String::from).into(),
            options: options().into(),
            exit_code: EXIT_CODE,
            runs: vec![kat, san_run("replay", SanRunVerdict::Clean, Outcome::Exited(0))],
            checks: vec![check("replay"), check("tampered ciphertexts")],
            findings: vec![],
            hooks: vec![],
            toolchain: golden.toolchain,
            build_key: "key".into(),
            library_sha256: "lib".into(),
            harness_commit: "commit".into(),
            started: "start".into(),
            finished: "end".into(),
        }
    }

    fn san_run(name: &str, verdict: SanRunVerdict, outcome: Outcome) -> SanRun {
        SanRun {
            run: name.into(),
            command: vec![],
            outcome,
            wall_s: 1.0,
            verdict,
            detail: None,
            expected_sha256: None,
            actual_sha256: None,
        }
    }

    #[test]
    fn a_kept_record_is_derived_again() {
        let sub = Submission::load("pqclean-ml-kem").unwrap();
        let inst = &sub.instances[0];
        let rec = clean_record(&sub);
        check_kept(&rec, &sub, inst).unwrap();
        let refused = |edit: &dyn Fn(&mut SanitizeRecord), words: &str| {
            let mut r = rec.clone();
            edit(&mut r);
            let e = format!("{:#}", check_kept(&r, &sub, inst).unwrap_err());
            assert!(e.contains(words), "{words}: {e}");
        };
        refused(&|r| r.label = "ML-KEM-768".into(), "the record of pqclean-ml-kem ML-KEM-768");
        refused(&|r| r.status = SanStatus::Findings, "it says findings, but its runs, checks and hooks give clean");
        refused(&|r| r.hooks = vec!["libx.so defines __asan_on_error".into()], "it says clean, but");
        refused(&|r| r.checks[1].verdict = crate::evidence::schema::CheckVerdict::Fails, "give mismatch");
        refused(&|r| r.checks[0].check = "verify contract".into(), "`verify contract` that a KEM does not run");
        refused(
            &|r| r.runs[0].actual_sha256 = Some("00".repeat(32)),
            "says clean, but its digest is not the published",
        );
        refused(&|r| r.runs[0].expected_sha256 = Some("00".repeat(32)), "another digest than kat.sha256 gives now");
        refused(&|r| r.runs[1].outcome = Outcome::Exited(EXIT_CODE), "ended exit status 86 but says Clean");
        refused(&|r| r.exit_code = 0, "other sanitizer settings");
        refused(
            &|r| {
                r.findings.push(SanFinding {
                    sanitizer: "AddressSanitizer".into(),
                    kind: "heap-buffer-overflow".into(),
                    what: "WRITE of size 1".into(),
                    at: crate::evidence::schema::CtFrame { function: "f".into(), file: "a.c".into(), line: 3 },
                    entry: None,
                    runs: vec!["kat".into()],
                    stack: vec![],
                });
                r.status = SanStatus::Findings;
            },
            "1 finding(s) but 0 run(s) stopped with a report",
        );
        // A report stands as its finding: kept.
        let mut found = rec.clone();
        found.runs[1] = san_run("replay", SanRunVerdict::Report, Outcome::Exited(EXIT_CODE));
        found.findings.push(SanFinding {
            sanitizer: "UndefinedBehaviorSanitizer".into(),
            kind: "signed-integer-overflow".into(),
            what: "".into(),
            at: crate::evidence::schema::CtFrame { function: "f".into(), file: "a.c".into(), line: 3 },
            entry: None,
            runs: vec!["replay".into()],
            stack: vec![],
        });
        found.status = SanStatus::Findings;
        check_kept(&found, &sub, inst).unwrap();
        found.findings[0].runs = vec!["kat".into()];
        assert!(check_kept(&found, &sub, inst).unwrap_err().to_string().contains("names runs that left no report"));
    }

    fn finished(outcome: Outcome, stderr: &str) -> Finished {
        Finished {
            outcome,
            stdout_bytes: 0,
            stderr: stderr.into(),
            wall: Duration::ZERO,
            cpu: crate::container::hostcpu::HostCpu::Unavailable("test".into()),
        }
    }

    const UB: &str = "/src/a/k.c:9:5: runtime error: signed integer overflow: 2147483647 + 1 cannot be represented in type 'int'\n    #0 0x1 in f /src/a/k.c:9\n    #1 0x2 in main /drivers/kat.c:3\n";

    fn judged(outcome: Outcome, stderr: &str) -> (SanRun, Option<report::Report>) {
        judge_run("kat", vec![], &finished(outcome, stderr), Duration::ZERO)
    }

    #[test]
    fn a_report_is_read_only_after_the_sanitizers_exit_code() {
        let (run, rep) = judged(Outcome::Exited(EXIT_CODE), UB);
        assert_eq!(run.verdict, SanRunVerdict::Report);
        assert_eq!(rep.unwrap().at.line, 9);
        // The same text with exit 0 is the program's own: no finding, said in the detail.
        let (run, rep) = judged(Outcome::Exited(0), UB);
        assert_eq!((run.verdict, rep), (SanRunVerdict::Clean, None));
        assert!(run.detail.unwrap().contains("program's own text"));
        // With another failure it is a failed run, never a finding.
        assert_eq!(judged(Outcome::Signalled(11), UB).0.verdict, SanRunVerdict::Failed);
        assert_eq!(judged(Outcome::Exited(1), UB).0.verdict, SanRunVerdict::Failed);
    }

    #[test]
    fn the_sanitizers_exit_without_a_report_is_never_clean() {
        for stderr in
            ["", "no errors\n", "==1==ERROR: AddressSanitizer: x on y\n", "SUMMARY: AddressSanitizer: clean\n"]
        {
            let runs = vec![judged(Outcome::Exited(EXIT_CODE), stderr)];
            assert_eq!(runs[0].0.verdict, SanRunVerdict::Unreadable, "{stderr:?}");
            assert_eq!(status(&runs, &[], &[]).0, SanStatus::Failed, "{stderr:?}");
        }
    }

    #[test]
    fn status_follows_reports_failures_differences_and_hooks() {
        let clean = judged(Outcome::Exited(0), "no errors\n");
        let report = judged(Outcome::Exited(EXIT_CODE), UB);
        let failed = judged(Outcome::TimedOut, "");
        let mut mismatch = clean.clone();
        mismatch.0.verdict = SanRunVerdict::Mismatch;
        let hooks = ["libinstance.so defines __asan_default_options".to_owned()];
        let st = |runs: &[(SanRun, Option<report::Report>)], checks: &[Check], hooks: &[String]| {
            status(runs, checks, hooks).0
        };
        let one = std::slice::from_ref(&clean);
        assert_eq!(st(one, &[], &[]), SanStatus::Clean);
        assert_eq!(st(&[clean.clone(), report.clone(), failed.clone()], &[], &hooks), SanStatus::Findings);
        assert_eq!(st(&[clean.clone(), failed], &[], &[]), SanStatus::Failed);
        assert_eq!(st(&[clean.clone(), mismatch], &[], &[]), SanStatus::Mismatch);
        let fails = Check {
            check: "replay".into(),
            seeds: vec![],
            verdict: crate::evidence::schema::CheckVerdict::Fails,
            detail: "differs".into(),
        };
        assert_eq!(st(one, &[fails], &[]), SanStatus::Mismatch);
        assert_eq!(st(one, &[], &hooks), SanStatus::Undetermined);
        assert_eq!(st(&[], &[], &[]), SanStatus::Failed, "nothing ran is no clean");
        // One finding per place, with every run that met it.
        let mut again = report.clone();
        again.0.run = "replay".into();
        let f = findings(&[report, again]);
        assert_eq!((f.len(), f[0].runs.clone()), (1, vec!["kat".to_owned(), "replay".to_owned()]));
    }

    #[test]
    fn the_options_fix_what_a_candidates_defaults_could_change() {
        let [asan, ubsan] = options();
        for o in [&asan, &ubsan] {
            assert!(o.contains("halt_on_error=1") && o.contains(&format!("exitcode={EXIT_CODE}")), "{o}");
            assert!(o.contains("log_path=stderr"), "{o}");
        }
        assert!(asan.starts_with("ASAN_OPTIONS=") && asan.contains("allow_user_poisoning=0"));
        assert!(ubsan.starts_with("UBSAN_OPTIONS=") && ubsan.contains("print_stacktrace=1"));
    }

    #[test]
    fn qemu_user_and_the_host_are_refused() {
        let other = Arch::ALL.into_iter().find(|a| *a != Arch::host()).unwrap();
        assert!(refusal(other, EngineChoice::Auto).unwrap().contains("qemu-user"));
        assert!(refusal(Arch::host(), EngineChoice::Host).unwrap().contains("--engine host"));
        assert_eq!(refusal(Arch::host(), EngineChoice::Auto), None);
    }

    #[test]
    fn hooks_are_definitions_of_the_interface_and_calls_that_silence_it() {
        assert!(elf_hooks(b"not an elf").is_empty());
        let own = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        // This test binary defines no sanitizer interface.
        assert!(elf_hooks(&own).is_empty());
    }
}
