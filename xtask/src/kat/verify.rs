//! `cargo xtask verify`: build every instance in the pinned toolchain, generate
//! its KATs and check their digests against kat/<id>/kat.sha256.
//!
//! Each finished instance is committed at once: its KAT log (written whole or not at
//! all), the submission's summary with that instance's entry replaced, and the evidence
//! index. An interruption or an engine failure stops the run before anything is
//! recorded for the instance at hand; results of other instances are kept.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use camino::Utf8Path;

use sha2::Sha256;
use xshell::Shell;

use crate::compile::builder::{Build, BuildCtx, Built, RunCtx};
use crate::compile::options::Inputs;
use crate::compile::recipe;
use crate::compile::sources::{self, Source};
use crate::compile::submission::{Instance, Submission};
use crate::container::sandbox::Outcome;
pub use crate::evidence::schema::Status;
use crate::evidence::schema::{self, Check, InstanceResult, KatFileResult, ResultRow, Summary, ToolchainRecord};
use crate::evidence::{self, Layout};
use crate::family::{CheckCtx, Family, KatPart};
use crate::kat::{self, Canonical, Manifest};
use crate::measure::runner;
use crate::project;
use crate::sha::Sha256Hex;

/// `verify`: build every instance, run its KATs, check their digests.
#[derive(Debug, Clone)]
pub struct Verify {
    pub inputs: Inputs,
    pub kat_manifest: Option<camino::Utf8PathBuf>,
    pub timeout: Option<u64>,
    pub resume: bool,
    pub jobs: Option<u32>,
    pub kat_files: Vec<String>,
}

impl Status {
    pub fn name(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Mismatch => "MISMATCH",
            Status::Nokat => "NOKAT",
            Status::Buildfail => "BUILDFAIL",
            Status::Cryptofail => "CRYPTOFAIL",
            Status::Overflow => "OVERFLOW",
            Status::Loadfail => "LOADFAIL",
            Status::Timeout => "TIMEOUT",
            Status::Crash => "CRASH",
            Status::Outputlimit => "OUTPUTLIMIT",
        }
    }

    /// Exit-code contract of KAT programs (see drivers/README.md): 3 = guard bytes
    /// overwritten, 4 = the driver could not map its input, 127 = the dynamic loader
    /// failed, other non-zero = a call of the API failed.
    /// Time and output limits are the tool's own observations, not exit codes.
    fn from_run(outcome: Outcome) -> Option<Status> {
        match outcome {
            Outcome::Exited(0) => None,
            Outcome::Exited(3) => Some(Status::Overflow),
            // The driver could not map its message (the hash KAT's 1 GiB).
            Outcome::Exited(4) => Some(Status::Crash),
            Outcome::Exited(127) => Some(Status::Loadfail),
            Outcome::Exited(_) => Some(Status::Cryptofail),
            Outcome::TimedOut => Some(Status::Timeout),
            Outcome::Signalled(_) | Outcome::OutOfMemory => Some(Status::Crash),
            Outcome::OutputLimit | Outcome::DiskLimit => Some(Status::Outputlimit),
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.pad(self.name())
    }
}

impl Summary {
    /// Results can be merged only between runs of the same thing.
    fn same_run(&self, other: &Summary) -> bool {
        self.id == other.id
            && self.system == other.system
            && self.toolchain == other.toolchain
            && self.source == other.source
            && self.patches == other.patches
            && self.kat_manifest_sha256 == other.kat_manifest_sha256
    }

    fn entry(&self, label: &str) -> Option<&InstanceResult> {
        self.instances.iter().find(|i| i.label == label)
    }

    /// Put `r` in place of any earlier entry, keeping the manifest's order.
    fn put(&mut self, r: InstanceResult, sub: &Submission) {
        self.instances.retain(|i| i.label != r.label);
        self.instances.push(r);
        let pos = |l: &str| sub.instances.iter().position(|i| i.label == l).unwrap_or(usize::MAX);
        self.instances.sort_by_key(|i| pos(&i.label));
    }
}

/// What one submission's verify works with.
/// What the instances of one submission share while they are verified.
struct Shared {
    summary: Summary,
    /// How long each instance took, for the next one's estimate.
    took: Vec<Duration>,
}

/// A `Ctx` without its shell (a shell is not shared between threads).
struct Parts<'a> {
    env: &'a crate::compile::builder::BuildEnv,
    tc: &'a ToolchainRecord,
    sb: &'a crate::container::sandbox::Sandbox,
    sub: &'a Submission,
    src: &'a Source,
    inputs: &'a Inputs,
    layout: &'a Layout,
    manifest: &'a Manifest,
    harness_commit: &'a str,
    kat_files: &'a [String],
}

impl Parts<'_> {
    fn ctx<'b>(&'b self, sh: &'b Shell) -> Ctx<'b> {
        let (env, tc, sb, sub, src, inputs) = (self.env, self.tc, self.sb, self.sub, self.src, self.inputs);
        Ctx {
            build: BuildCtx { sh, env, tc, sb, sub, src, inputs },
            layout: self.layout,
            manifest: self.manifest,
            harness_commit: self.harness_commit.to_owned(),
            timeout: Duration::ZERO,
            kat_files: self.kat_files,
        }
    }
}

#[derive(Clone)]
struct Ctx<'a> {
    build: BuildCtx<'a>,
    layout: &'a Layout,
    manifest: &'a Manifest,
    harness_commit: String,
    /// The KAT time limit of the instance at hand.
    timeout: Duration,
    /// `--kat-files`: the parts to run (empty: all).
    kat_files: &'a [String],
}

impl Verify {
    pub fn run(self, sh: &Shell) -> Result<()> {
        // KAT manifests are read with the sources, before any image work.
        let profile = crate::container::systems::SystemProfile::load(&self.inputs.system)?;
        let work = self.inputs.obtain(sh, &profile, |sub| self.check(sub))?;
        if work.is_empty() {
            // Every selected instance is restricted to other architectures (said above).
            crate::say!("verify: nothing to build on this architecture");
            return Ok(());
        }
        if self.kat_manifest.is_some() && work.len() != 1 {
            bail!("--kat-manifest applies to one submission at a time");
        }
        let ctx = self.inputs.context(sh, profile)?;
        let failed = self.verify_all(sh, &ctx, &work)?;
        evidence::reindex(&self.inputs.out)?;
        crate::ui::report("verify", (&self.inputs.system, &self.inputs.out), &failed)?;
        if !failed.is_empty() {
            return Err(crate::ui::Findings(format!("instances did not pass ({})", failed.join(", "))).into());
        }
        Ok(())
    }

    fn kat_path(&self, sub: &Submission) -> camino::Utf8PathBuf {
        self.kat_manifest.clone().unwrap_or_else(|| sub.kat_manifest_path())
    }

    /// The submission's KAT manifest loads and agrees with its manifest, and
    /// `--kat-files` names files its family writes.
    pub fn check(&self, sub: &Submission) -> Result<()> {
        let parts = sub.family()?.kat_parts;
        let known: Vec<&str> = parts.iter().map(|p| p.id).filter(|p| !p.is_empty()).collect();
        for asked in &self.kat_files {
            if !known.contains(&asked.as_str()) {
                return crate::ui::usage(match known.is_empty() {
                    true => format!("--kat-files {asked}: a {} writes one KAT file", sub.family()?.noun),
                    false => format!(
                        "--kat-files {asked}: a {} writes the KAT files {}{}",
                        sub.family()?.noun,
                        known.join(", "),
                        project::suggest(asked, known.iter().copied())
                    ),
                });
            }
        }
        let path = self.kat_path(sub);
        if !path.is_file() {
            return crate::ui::usage(format!("{}: no KAT manifest at {path}", sub.id));
        }
        Manifest::load(&path)?.check_against(sub)
    }

    /// Verify every submission of `work` in `ctx`; the submissions with instances that
    /// did not pass.
    pub fn verify_all(&self, sh: &Shell, ctx: &RunCtx, work: &[(Submission, Source)]) -> Result<Vec<String>> {
        let mut failed = Vec::new();
        for (sub, src) in work {
            let manifest = Manifest::of(sub, &self.kat_path(sub))?;
            let summary = self.verify_submission(sh, ctx, (sub, src), &manifest)?;
            let selected = summary.instances.iter().filter(|i| self.inputs.selects_label(&i.label));
            let bad = selected.filter(|i| i.finding()).count();
            if bad > 0 {
                failed.push(format!("{}: {bad} of {}", sub.id, summary.instances.len()));
            }
        }
        Ok(failed)
    }

    pub fn verify_submission(
        &self,
        sh: &Shell,
        ctx: &RunCtx,
        (sub, src): (&Submission, &Source),
        manifest: &Manifest,
    ) -> Result<Summary> {
        let (env, layout, profile) = (&ctx.env, &ctx.layout, &ctx.profile);
        let instances: Vec<&Instance> = sub.instances.iter().filter(|i| self.inputs.selects(i)).collect();
        if instances.is_empty() {
            bail!("{}: no instance matches {:?}", sub.id, self.inputs.instances);
        }
        // Every run of a candidate's program has the trial runner's sandbox (bench's).
        let sb = env.sandbox(runner::trial_limits(self.inputs.limits()));
        let tc = env.record(sh, &sb)?;
        crate::say!(
            "{} ({}): {} on {} [{}], source {}{}",
            sub.id,
            sub.name,
            tc.gcc_version,
            tc.arch.uname(),
            tc.image.as_deref().unwrap_or("host, unpinned, unsandboxed"),
            src.provenance,
            sources::patch_note(&src.patches)
        );
        std::fs::create_dir_all(layout.kat_dir(&sub.id))
            .with_context(|| format!("cannot create {}", layout.kat_dir(&sub.id)))?;
        let mut summary = Summary {
            schema: schema::version::<Summary>(),
            id: sub.id.clone(),
            name: sub.name.clone(),
            system: self.inputs.system.clone(),
            system_profile: profile.clone(),
            harness_commit: project::harness_commit(sh),
            started: project::now_utc(),
            finished: project::now_utc(),
            toolchain: tc.clone(),
            source: src.provenance.clone(),
            patches: src.patches.clone(),
            kat_manifest: project::relative(&manifest.path),
            kat_manifest_sha256: project::sha256_file(&manifest.path)?,
            limits: sb.limits.clone(),
            kat_timeout_secs: self.timeout.unwrap_or(crate::compile::options::KAT_TIMEOUT_SECS),
            build_timeout_secs: self.inputs.build_timeout,
            instances: Vec::new(),
        };
        self.keep_earlier(layout, (sub, manifest), &mut summary);
        let ctx = Ctx {
            build: BuildCtx { sh, env, tc: &tc, sb: &sb, sub, src, inputs: &self.inputs },
            layout,
            manifest,
            harness_commit: summary.harness_commit.clone(),
            timeout: Duration::ZERO,
            kat_files: &self.kat_files,
        };
        let shared = Mutex::new(Shared { summary, took: Vec::new() });
        let jobs =
            self.jobs.map_or_else(crate::compile::options::default_jobs, |j| j as usize).clamp(1, instances.len());
        if jobs == 1 {
            for inst in &instances {
                self.one(&ctx, inst, &shared)?;
            }
        } else {
            crate::note!("{}: {} instances, {jobs} at a time (--jobs)", sub.id, instances.len());
            self.in_parallel(jobs, &ctx, &instances, &shared)?;
        }
        let summary = shared.into_inner().map_err(|_| anyhow::anyhow!("a verify worker panicked"))?.summary;
        Ok(summary)
    }

    /// Verify one instance with its own limits and add its result to the summary on disk.
    fn one(&self, ctx: &Ctx, inst: &Instance, shared: &Mutex<Shared>) -> Result<()> {
        let (sub, tc) = (ctx.build.sub, ctx.build.tc);
        let family = sub.family()?;
        let lock = || shared.lock().map_err(|_| anyhow::anyhow!("a verify worker panicked"));
        if self.resume {
            if let Some(kept) = ctx.current(&lock()?.summary, inst)? {
                print_row(&sub.id, &kept, (tc, family), " (kept, --resume)");
                return Ok(());
            }
        }
        let estimate = {
            let took = &lock()?.took;
            (!took.is_empty()).then(|| took.iter().sum::<Duration>() / took.len() as u32)
        };
        let live = crate::ui::progress(format!("{} {}", sub.id, inst.label), estimate);
        // An instance's own limits (manifest) apply unless the command line sets them.
        let sb = ctx.build.env.sandbox(runner::trial_limits(self.inputs.limits_for(inst)));
        let timeout = Duration::from_secs(Inputs::kat_timeout(self.timeout, inst));
        let ictx = Ctx { build: BuildCtx { sb: &sb, ..ctx.build }, timeout, ..ctx.clone() };
        let mut r = ictx.verify_instance(inst)?;
        let elapsed = live.elapsed();
        drop(live);
        let mut g = lock()?;
        if let Some(prev) = g.summary.entry(&inst.label) {
            r.keep_files_of(prev);
        }
        let r = r.known(inst);
        g.took.push(elapsed);
        print_row(&sub.id, &r, (tc, family), if r.build_reused { " (build reused)" } else { "" });
        g.summary.put(r, sub);
        g.summary.finished = project::now_utc();
        schema::write(&ctx.layout.kat_summary(&sub.id), &g.summary)?;
        evidence::update_index(&self.inputs.out).map(drop)
    }

    /// `jobs` workers take the instances in order, each with a shell of its own; the first
    /// failure stops the others at their next instance (an interruption wins).
    fn in_parallel(&self, jobs: usize, ctx: &Ctx, instances: &[&Instance], shared: &Mutex<Shared>) -> Result<()> {
        let (next, stop) = (AtomicUsize::new(0), AtomicBool::new(false));
        let parts = ctx.parts();
        let errors: Vec<anyhow::Error> = std::thread::scope(|s| {
            let workers: Vec<_> = (0..jobs)
                .map(|_| {
                    s.spawn(|| -> Result<()> {
                        // Lines say whose they are as the thread that started them does.
                        let _tag = crate::ui::tag().map(|t| crate::ui::prefix(&t));
                        let sh = Shell::new()?;
                        let ctx = parts.ctx(&sh);
                        while !stop.load(Ordering::Relaxed) {
                            let Some(inst) = instances.get(next.fetch_add(1, Ordering::Relaxed)) else { break };
                            if let Err(e) = self.one(&ctx, inst, shared) {
                                stop.store(true, Ordering::Relaxed);
                                return Err(e);
                            }
                        }
                        Ok(())
                    })
                })
                .collect();
            workers
                .into_iter()
                .filter_map(|w| w.join().unwrap_or_else(|_| Err(anyhow::anyhow!("panicked"))).err())
                .collect()
        });
        let mut errors = errors.into_iter();
        let first = errors.next();
        match first {
            None => Ok(()),
            Some(e) if e.is::<crate::container::interrupt::Interrupted>() => Err(e),
            Some(e) => Err(errors.find(|e| e.is::<crate::container::interrupt::Interrupted>()).unwrap_or(e)),
        }
    }

    /// Keep the entries of an earlier summary made with the same toolchain, source and
    /// KAT manifest, while they are the indexed evidence and each PASS is derived again
    /// from its own log; say so when they are dropped (those instances run again).
    fn keep_earlier(&self, layout: &Layout, (sub, manifest): (&Submission, &Manifest), summary: &mut Summary) {
        let path = layout.kat_summary(&sub.id);
        let prev = match schema::read::<Summary>(&path) {
            Ok(Some(prev)) if prev.same_run(summary) => prev,
            Ok(Some(prev)) => {
                return crate::say!(
                    "  earlier results ({} instances) dropped: made with another toolchain, source or KAT manifest",
                    prev.instances.len()
                )
            }
            Ok(None) => return,
            Err(e) => return crate::say!("  earlier results dropped: {e:#}"),
        };
        let rel = layout.relative(&path);
        let root = &self.inputs.out;
        let index = match evidence::read_index(root).and_then(|i| evidence::indexed(root, &i, &rel).map(|()| i)) {
            Ok(index) => index,
            Err(e) => {
                return crate::warning!("earlier results of {} dropped, every instance runs again: {e:#}", sub.id)
            }
        };
        summary.started = prev.started.clone();
        for r in prev.instances.into_iter().filter(|r| sub.instances.iter().any(|i| i.label == r.label)) {
            match crate::kat::kept::check_kept(root, &index, (&rel, manifest), &r) {
                Ok(()) => summary.put(r, sub),
                Err(e) => crate::warning!("{} {}: earlier result dropped, it runs again: {e:#}", sub.id, r.label),
            }
        }
    }
}

fn print_row(id: &str, r: &InstanceResult, (tc, family): (&ToolchainRecord, &Family), note: &str) {
    // A check that stands as a verdict of its own shows beside the status (one that
    // turns a PASS into MISMATCH is the status's message already).
    let own_verdict = family.corroboration.is_some_and(|c| !c.failure_is_mismatch);
    let failed_check = r.check.as_ref().filter(|c| own_verdict && !c.holds());
    let failed_tamper = r.tampered.as_ref().filter(|c| !c.holds());
    let verdict: String =
        failed_check.into_iter().chain(failed_tamper).map(|c| format!("  {}: {}", c.check, c.verdict)).collect();
    crate::say!(
        "  {:<18} {:<14} {:<11} {}  [{}]{verdict}{note}",
        r.label,
        tc.toolchain,
        r.status,
        r.actual_sha256.as_ref().map_or("-", Sha256Hex::short),
        r.flag_set,
    );
    crate::ui::row(ResultRow {
        id: id.to_owned(),
        instance: r.label.clone(),
        op: None,
        status: r.status.to_string(),
        check: r.check.as_ref().map(|c| c.verdict.to_string()),
        kat_sha256: r.actual_sha256.as_ref().map(|s| s.as_str().to_owned()),
        median_ns_per_op: None,
        origin: if note.contains("kept") { "kept" } else { "new" }.into(),
    });
    if let Some(why) = &r.known_issue {
        crate::say!("      known issue (documented in the manifest, not counted as a finding): {why}");
    }
    for f in &r.files {
        let status = f.status.map_or("not checked".to_owned(), |s| s.to_string());
        let kept = if f.kept { " (kept)" } else { "" };
        let sha = f.actual_sha256.as_ref().map_or("-", Sha256Hex::short);
        let time = f.run_seconds.map_or(String::new(), |t| format!("  {t:.1} s"));
        crate::say!("      {:<32} {status:<11} {sha}{time}{kept}", f.file);
    }
    let lines = r.message.iter().chain(failed_check.map(|c| &c.detail)).chain(failed_tamper.map(|c| &c.detail));
    for line in lines.flat_map(|m| m.lines()) {
        crate::say!("      {line}");
    }
}

impl InstanceResult {
    /// A PASS whose corroborating and tampered-input checks, if any ran, hold.
    pub fn clean(&self) -> bool {
        self.status == Status::Pass && [&self.check, &self.tampered].iter().all(|c| c.as_ref().is_none_or(Check::holds))
    }

    /// Not clean, and not the documented known failure: what fails a run.
    pub fn finding(&self) -> bool {
        !self.clean() && self.known_issue.is_none()
    }
}

/// The statuses a manifest's `known_issue` can document: KAT failures, never a build
/// or a run that did not finish.
fn known(status: Status, inst: &Instance) -> Option<String> {
    matches!(status, Status::Mismatch | Status::Nokat).then(|| inst.known_issue.clone()).flatten()
}

impl Ctx<'_> {
    /// Everything but the shell, for workers that bring their own.
    fn parts(&self) -> Parts<'_> {
        let b = &self.build;
        Parts {
            env: b.env,
            tc: b.tc,
            sb: b.sb,
            sub: b.sub,
            src: b.src,
            inputs: b.inputs,
            layout: self.layout,
            manifest: self.manifest,
            harness_commit: &self.harness_commit,
            kat_files: self.kat_files,
        }
    }

    /// The earlier entry of `inst` when it is current: same build key (so the same
    /// compilers, source, patches, drivers and flags) and made by a completed run.
    fn current(&self, summary: &Summary, inst: &Instance) -> Result<Option<InstanceResult>> {
        let Some(prev) = summary.entry(&inst.label) else { return Ok(None) };
        let key = self.build.key_of(inst)?;
        Ok((prev.build_key == key).then(|| prev.clone()))
    }

    fn verify_instance(&self, inst: &Instance) -> Result<InstanceResult> {
        let (sub, layout) = (self.build.sub, self.layout);
        let family = sub.family()?;
        let files = sub.kat_files(inst)?;
        let entry = (files.len() == 1).then(|| self.manifest.entry(&inst.label, &files[0].1)).flatten();
        crate::ui::doing("build");
        let built = self.build.ensure(inst)?;
        let (plan, key) = match &built {
            Built::Ok(b) => (b.record.plan.clone(), b.record.key.clone()),
            Built::Failed { plan, key, .. } => (plan.clone(), key.clone()),
        };
        let mut r = InstanceResult {
            label: inst.label.clone(),
            status: Status::Pass,
            flag_set: plan.flag_set.clone(),
            flags: plan.flags.clone(),
            kat_file: entry.map(|e| e.file.clone()),
            mode: entry.map(|e| e.mode),
            records: entry.and_then(|e| e.records),
            expected_sha256: entry.map(|e| e.sha256.clone()),
            actual_sha256: None,
            log: None,
            build_key: key,
            build_reused: false,
            library_sha256: None,
            program_sha256: None,
            commands: plan.steps.iter().map(|s| s.argv.clone()).collect(),
            run_command: plan.run.clone(),
            run_outcome: None,
            run_seconds: None,
            output_bytes: None,
            check: None,
            tampered: None,
            lengths: family.kat_lengths.then_some(sub.kat.lengths),
            message: None,
            known_issue: None,
            files: Vec::new(),
            kat_cpu_ns: None,
            library: None,
            finished: String::new(),
            harness_commit: self.harness_commit.clone(),
        };
        let build = match built {
            Built::Ok(b) => b,
            Built::Failed { log, .. } => {
                let path = layout.build_log(&sub.id, &inst.label);
                project::write_atomic(&path, log.as_bytes())?;
                r.status = Status::Buildfail;
                r.message = Some(format!(
                    "build failed with the {} flags; compiler output in {}:\n{}",
                    plan.flag_set,
                    layout.relative(&path),
                    tail(&log, 12)
                ));
                return Ok(r.finish());
            }
        };
        r.build_reused = build.reused;
        r.library_sha256 = build.record.output_sha256(recipe::LIBRARY).map(str::to_owned);
        r.program_sha256 = build.record.program_sha256(&plan.run[0]).map(str::to_owned);
        r.library = Some(crate::measure::elf::read(&build.out.join(recipe::LIBRARY), r.library_sha256.as_deref()));
        if let Some(why) = &build.rebuilt_because {
            crate::say!("  {}: rebuilt: {why}", inst.label);
        }
        // Before the KAT run: a KAT log lands only with its instance's whole result, so an
        // interruption in this check must find none written.
        if let Some(check) = self.build.sub.family()?.tampers(&build.record) {
            crate::ui::doing(check.name);
            r.tampered = Some((check.run)(&CheckCtx { runs: &self.program_runs(&build) })?);
        }
        if files.len() > 1 {
            return self.run_files(inst, &build, &files, r);
        }
        let Some(entry) = entry else {
            r.status = Status::Nokat;
            r.message = Some(format!("no line for {} in {}", inst.label, self.manifest.path));
            return Ok(r.finish());
        };
        crate::ui::doing("KAT run");
        self.run_kat(inst, &build, (entry, ""), r)
    }

    /// A family's several KAT files, each from its own run of the program with its own
    /// verdict; the instance's status is the first that is not PASS.
    fn run_files(
        &self,
        inst: &Instance,
        build: &Build,
        files: &[(KatPart, String)],
        mut r: InstanceResult,
    ) -> Result<InstanceResult> {
        for (part, file) in files {
            let mut f = KatFileResult::new(part, file);
            if !self.kat_files.is_empty() && !self.kat_files.iter().any(|p| p == part.id) {
                r.files.push(f);
                continue;
            }
            match self.manifest.entry(&inst.label, file) {
                None => {
                    f.status = Some(Status::Nokat);
                    f.message = Some(format!("no line for {}/{file} in {}", inst.label, self.manifest.path));
                }
                Some(entry) => {
                    crate::ui::doing(format!("KAT file {}", part.id));
                    let one = InstanceResult { files: Vec::new(), ..r.clone() };
                    f = KatFileResult::of(part, file, entry, self.run_kat(inst, build, (entry, part.id), one)?);
                }
            }
            r.files.push(f);
        }
        r.fold_files();
        Ok(r.finish())
    }

    /// Run the KAT program of a finished build (with its part's argument, if any),
    /// streaming its text into the log and the canonical digest, and judge it.
    fn run_kat(
        &self,
        inst: &Instance,
        build: &Build,
        (entry, part): (&kat::Entry, &str),
        mut r: InstanceResult,
    ) -> Result<InstanceResult> {
        let (sub, layout, plan) = (self.build.sub, self.layout, &build.record.plan);
        let timeout = self.timeout;
        let mut argv = plan.run.clone();
        argv.extend((!part.is_empty()).then(|| part.to_owned()));
        let log_path = layout.kat_part_log(&sub.id, &inst.label, part);
        let mut tee = Tee {
            file: std::io::BufWriter::new(project::temp_in(&layout.kat_dir(&sub.id))?),
            canonical: Canonical::new(entry.mode, entry.records, Sha256::default()),
        };
        let (sh, sb) = (self.build.sh, self.build.sb);
        let cap = sb.limits.output_cap_bytes;
        let f = runner::run_one(sh, (sb, build), (&argv, b""), (timeout, cap), &mut tee)?;
        let tmp =
            tee.file.into_inner().map_err(std::io::IntoInnerError::into_error).context("cannot write the KAT log")?;
        r.log = Some(layout.relative(&log_path));
        r.run_command = build.command(self.build.env.backend, &argv);
        r.run_outcome = Some(f.outcome);
        r.run_seconds = Some(f.wall.as_secs_f64());
        r.output_bytes = Some(f.stdout_bytes);
        r.kat_cpu_ns = f.cpu.ns();
        if let Some(status) = Status::from_run(f.outcome) {
            r.status = status;
            r.message = Some(self.describe(f.outcome, &f.stderr));
        } else {
            let text = Utf8Path::from_path(tmp.path()).context("non-UTF-8 temp path")?;
            self.judge(inst, build, (entry, tee.canonical, text), &mut r)?;
        }
        // The log lands only with its verdict: an interrupted replay leaves nothing.
        project::persist(tmp, &log_path)?;
        Ok(r.finish())
    }

    /// The verdict on a KAT text that finished cleanly (`text`: where it is now).
    fn judge(
        &self,
        inst: &Instance,
        build: &Build,
        (entry, canonical, text): (&kat::Entry, Canonical<Sha256>, &Utf8Path),
        r: &mut InstanceResult,
    ) -> Result<()> {
        let sub = self.build.sub;
        match kat::finish_digest(canonical) {
            Ok(actual) => {
                if entry.sha256 != *actual {
                    r.status = Status::Mismatch;
                    r.message = Some(mismatch_message(entry, &actual, text, self.build.src, sub.kat_owner(inst), sub));
                }
                r.actual_sha256 = Some(Sha256Hex::computed(actual));
                if r.status == Status::Pass {
                    self.corroborate(build, text, r)?;
                } else if let Some(check) = sub.family()?.corroborates(&build.record).filter(|c| c.on_mismatch) {
                    // A verdict of its own is worth having beside a MISMATCH too.
                    r.check = Some((check.run)(&CheckCtx { runs: &self.program_runs(build) })?);
                }
            }
            Err(why) => {
                r.status = Status::Mismatch;
                r.message = Some(format!("expected sha256 {}\nno digest: {why}", entry.sha256));
            }
        }
        Ok(())
    }

    /// A matching digest is a PASS only when the build did not embed its text and, where
    /// the API can be reached, the replay on seeds drawn now agrees.
    fn corroborate(&self, build: &Build, log_path: &Utf8Path, r: &mut InstanceResult) -> Result<()> {
        crate::ui::doing("checking the KAT result");
        let text = read_prefix(log_path, DIFF_READ);
        if let Some(found) = crate::kat::embedded_record(build, &text)? {
            r.status = Status::Mismatch;
            r.message = Some(format!("the KAT text has the published digest, but {found}: it was not computed"));
            return Ok(());
        }
        let Some(check) = self.build.sub.family()?.corroborates(&build.record) else {
            return Ok(());
        };
        let result = (check.run)(&CheckCtx { runs: &self.program_runs(build) })?;
        if !result.holds() && check.failure_is_mismatch {
            r.status = Status::Mismatch;
            r.message = Some(format!(
                "the KAT text has the published digest, but the {} on seeds drawn at run time failed: {}",
                check.name, result.detail
            ));
        }
        r.check = Some(result);
        Ok(())
    }

    fn program_runs<'b>(&'b self, build: &'b Build) -> ProgramRuns<'b> {
        ProgramRuns { sh: self.build.sh, sb: self.build.sb, build, timeout: self.timeout }
    }

    /// What happened to a KAT program that did not finish cleanly.
    fn describe(&self, outcome: Outcome, stderr: &str) -> String {
        let limits = &self.build.sb.limits;
        let what = match outcome {
            Outcome::TimedOut => format!("timed out after {} s (the harness's clock)", self.timeout.as_secs()),
            Outcome::OutOfMemory => format!("was killed: out of memory (limit {})", limits.memory),
            // Some engines cannot see an OOM kill (podman nested in a container writes no
            // `oom` file): say so rather than guess.
            Outcome::Signalled(9) => {
                format!("{outcome}; the engine reported no out-of-memory kill (limit {})", limits.memory)
            }
            Outcome::Exited(4) => {
                format!("{outcome}: the driver could not map its message buffer (memory limit {})", limits.memory)
            }
            Outcome::OutputLimit => format!(
                "printed more than the output cap ({} MiB) and was stopped; the log keeps the first {} MiB \
                 (raise --output-cap-mib)",
                limits.output_cap_bytes >> 20,
                limits.output_cap_bytes >> 20
            ),
            other => other.to_string(),
        };
        format!("KAT program {what}; stderr:\n{}", tail(stderr, 12))
    }
}

impl KatFileResult {
    /// A file not run (yet).
    fn new(part: &KatPart, file: &str) -> KatFileResult {
        KatFileResult {
            part: part.id.to_owned(),
            file: file.to_owned(),
            status: None,
            kept: false,
            mode: None,
            expected_sha256: None,
            actual_sha256: None,
            log: None,
            run_command: Vec::new(),
            run_outcome: None,
            run_seconds: None,
            output_bytes: None,
            message: None,
        }
    }

    /// The file's verdict, from the run of its part.
    fn of(part: &KatPart, file: &str, entry: &kat::Entry, run: InstanceResult) -> KatFileResult {
        KatFileResult {
            status: Some(run.status),
            mode: Some(entry.mode),
            expected_sha256: Some(entry.sha256.clone()),
            actual_sha256: run.actual_sha256,
            log: run.log,
            run_command: run.run_command,
            run_outcome: run.run_outcome,
            run_seconds: run.run_seconds,
            output_bytes: run.output_bytes,
            message: run.message,
            ..KatFileResult::new(part, file)
        }
    }
}

impl InstanceResult {
    /// The instance's status from its files: the first that is not PASS, else PASS; a
    /// message names every file that did not pass and every file not checked.
    fn fold_files(&mut self) {
        let ran = self.files.iter().filter_map(|f| f.status.map(|s| (f, s)));
        self.status = ran.clone().map(|(_, s)| s).find(|s| *s != Status::Pass).unwrap_or(Status::Pass);
        let mut lines: Vec<String> = Vec::new();
        for (f, s) in ran.filter(|(_, s)| *s != Status::Pass) {
            lines.push(format!("{}: {s}", f.file));
            lines.extend(f.message.iter().flat_map(|m| m.lines().take(14)).map(|l| format!("  {l}")));
        }
        let unchecked: Vec<&str> = self.files.iter().filter(|f| f.status.is_none()).map(|f| f.part.as_str()).collect();
        if !unchecked.is_empty() {
            lines.push(format!(
                "{} of {} KAT files checked; not checked: {} (--kat-files)",
                self.files.len() - unchecked.len(),
                self.files.len(),
                unchecked.join(", ")
            ));
        }
        self.run_seconds = Some(self.files.iter().filter_map(|f| f.run_seconds).sum());
        self.message = (!lines.is_empty()).then(|| lines.join("\n"));
    }

    /// Files this run did not check keep the result an earlier run of the same build
    /// gave them (marked as kept); the status is folded again.
    fn keep_files_of(&mut self, prev: &InstanceResult) {
        if prev.build_key != self.build_key || self.files.iter().all(|f| f.status.is_some()) {
            return;
        }
        for f in self.files.iter_mut().filter(|f| f.status.is_none()) {
            if let Some(old) = prev.files.iter().find(|o| o.file == f.file && o.status.is_some()) {
                *f = KatFileResult { kept: true, ..old.clone() };
            }
        }
        self.fold_files();
    }

    /// Files of a multi-file family that no run has checked.
    pub fn unchecked_files(&self) -> usize {
        self.files.iter().filter(|f| f.status.is_none()).count()
    }

    fn finish(mut self) -> InstanceResult {
        self.finished = project::now_utc();
        self
    }

    /// Mark the documented known failure of `inst`, if this status is it.
    fn known(mut self, inst: &Instance) -> InstanceResult {
        self.known_issue = known(self.status, inst);
        self
    }
}

/// The KAT log and its canonical digest, written as the program prints.
struct Tee {
    file: std::io::BufWriter<tempfile::NamedTempFile>,
    canonical: Canonical<Sha256>,
}

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.file.write_all(buf)?;
        self.canonical.update(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// How much of a KAT text the first-difference report reads.
const DIFF_READ: u64 = 16 << 20;

fn mismatch_message(
    entry: &kat::Entry,
    actual: &str,
    generated: &Utf8Path,
    src: &Source,
    inst: &Instance,
    sub: &Submission,
) -> String {
    let mut m = format!("expected sha256 {}\nactual   sha256 {actual}", entry.sha256);
    let Some(shown) = sub.kat.reference.as_ref().map(|r| inst.expand(r)) else {
        m.push_str("\nno reference KAT text ships with this source, so no record can be compared");
        return m;
    };
    // Named inside the source tree: evidence names no folder of the measuring machine.
    let (path, shown) = (src.root.join(&shown), format!("`{shown}` of the source tree"));
    let Ok(reference) = project::read_regular(&path, DIFF_READ) else {
        m.push_str(&format!("\nthe reference KAT text {shown} is missing or too large, so no record is compared"));
        return m;
    };
    if kat::digest(&reference, entry).ok().as_deref() != Some(entry.sha256.as_str()) {
        m.push_str(&format!("\n{shown} does not hash to the expected digest either; no record comparison"));
        return m;
    }
    let text = read_prefix(generated, DIFF_READ);
    match kat::first_differing_record(&reference, &text, entry.mode) {
        Some((_, want, got)) => m.push_str(&format!(
            "\nfirst differing record (reference {shown}):\n--- expected\n{}--- generated\n{}",
            tail(&want, 16),
            tail(&got, 16)
        )),
        None => m.push_str("\nthe generated text equals the reference text outside the covered records"),
    }
    m
}

fn read_prefix(path: &Utf8Path, max: u64) -> Vec<u8> {
    use std::io::Read;
    let mut data = Vec::new();
    if let Ok(f) = std::fs::File::open(path) {
        let _ = f.take(max).read_to_end(&mut data);
    }
    data
}

/// The last `n` lines, safe to print (the text comes from a sandbox).
fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    let mut s = lines[start..].join("\n");
    s.push('\n');
    project::printable(&s)
}

/// A family's check runs the build's programs here, each a trial of the runner in the
/// KAT run's sandbox (`measure::runner::run_one`).
struct ProgramRuns<'a> {
    sh: &'a Shell,
    sb: &'a crate::container::sandbox::Sandbox,
    build: &'a Build,
    timeout: std::time::Duration,
}

impl crate::family::RunProgram for ProgramRuns<'_> {
    fn run(&self, argv: &[String], stdin: &[u8], cap: u64) -> Result<std::result::Result<Vec<u8>, String>> {
        let mut out = Vec::new();
        let cap = cap.min(self.sb.limits.output_cap_bytes);
        let f = crate::measure::runner::run_one(
            self.sh,
            (self.sb, self.build),
            (argv, stdin),
            (self.timeout, cap),
            &mut out,
        )?;
        if !f.outcome.success() {
            let tail = crate::project::last_lines(&f.stderr, 4);
            return Ok(Err(format!("`{}` {}: {tail}", argv.join(" "), f.outcome)));
        }
        Ok(Ok(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_come_from_what_was_observed() {
        assert_eq!(Status::from_run(Outcome::Exited(0)), None);
        assert_eq!(Status::from_run(Outcome::Signalled(9)), Some(Status::Crash));
        assert_eq!(Status::from_run(Outcome::OutOfMemory), Some(Status::Crash));
        assert_eq!(Status::from_run(Outcome::TimedOut), Some(Status::Timeout));
        assert_eq!(Status::from_run(Outcome::Exited(124)), Some(Status::Cryptofail));
        assert_eq!(Status::from_run(Outcome::Exited(4)), Some(Status::Crash));
        assert_eq!(Status::from_run(Outcome::OutputLimit), Some(Status::Outputlimit));
        assert_eq!(serde_json::to_string(&Status::Outputlimit).unwrap(), "\"OUTPUTLIMIT\"");
        assert_eq!(Status::Buildfail.to_string(), "BUILDFAIL");
    }
}
