//! `cargo xtask campaign`: the toolchain image, then verify and bench for each
//! submission on one system. Resumable: with --resume, a step whose evidence exists
//! and matches the evidence index is skipped. Timing only follows a passing verify.

use std::time::Instant;

use anyhow::{bail, Context, Result};
use camino::Utf8Path;
use xshell::Shell;

use crate::build::builder::RunCtx;
use crate::build::submission::Submission;
use crate::container::interrupt::Interrupted;
use crate::evidence::schema::{Summary, Survey};
use crate::evidence::{self, Layout};
use crate::flags::{Bench, Campaign, Inputs, Verify, KAT_TIMEOUT_SECS};
use crate::kat::verify::Status;
use crate::measure::hostgate::Gate;
use crate::measure::systems::SystemProfile;
use crate::{measure::profile, project};

#[derive(Debug, Clone, PartialEq, Eq)]
enum Step {
    Image,
    Verify(String),
    Bench(String),
    Profile(String),
}

impl std::fmt::Display for Step {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Step::Image => write!(f, "image"),
            Step::Verify(id) => write!(f, "verify {id}"),
            Step::Bench(id) => write!(f, "bench {id}"),
            Step::Profile(id) => write!(f, "profile {id}"),
        }
    }
}

/// True when every file below `prefix` (relative to `root`) is in the index, unchanged,
/// and there is at least one.
fn indexed(root: &Utf8Path, prefix: &Utf8Path) -> bool {
    let Ok(problems) = evidence::check(root) else { return false };
    let Ok(index) = evidence::read_index(root) else { return false };
    let under = |p: &String| Utf8Path::new(p).starts_with(prefix);
    problems.index.is_none()
        && index.keys().any(under)
        && problems.refused.is_empty()
        && !problems.changed.iter().chain(&problems.missing).chain(&problems.extra).any(under)
}

impl Campaign {
    /// Every instance of the manifest has a PASS made against today's KAT manifest,
    /// and the evidence is indexed.
    fn verify_done(&self, layout: &Layout, sub: &Submission) -> bool {
        let Ok(Some(summary)) = crate::evidence::schema::read::<Summary>(&layout.kat_summary(&sub.id)) else {
            return false;
        };
        let manifest_now = project::sha256_file(&sub.kat_manifest_path()).ok();
        let passed = |label: &str| summary.instances.iter().any(|i| i.label == label && i.status == Status::Pass);
        let rel = layout.kat_dir(&sub.id);
        manifest_now.as_deref() == Some(summary.kat_manifest_sha256.as_str())
            && sub.instances.iter().all(|i| passed(&i.label))
            && indexed(&self.out, rel.strip_prefix(&self.out).unwrap_or(&rel))
    }

    fn bench_done(&self, layout: &Layout, sub: &Submission) -> bool {
        let Ok(family) = sub.family() else { return false };
        let complete = sub.instances.iter().all(|i| {
            family.default_ops().iter().all(|op| project::is_regular(&layout.record(&sub.id, &i.label, op.name())))
        });
        let rel = layout.records_dir(&sub.id);
        complete && indexed(&self.out, rel.strip_prefix(&self.out).unwrap_or(&rel))
    }

    /// The survey speaks for every instance (an interrupted profile leaves one for the
    /// instances it finished), and the evidence is indexed.
    fn profile_done(&self, layout: &Layout, sub: &Submission) -> bool {
        let rel = layout.profile_dir(&sub.id);
        let Ok(Some(survey)) = crate::evidence::schema::read::<Survey>(&layout.survey(&sub.id)) else { return false };
        sub.instances.iter().all(|i| survey.instances.iter().any(|s| s.label == i.label))
            && indexed(&self.out, rel.strip_prefix(&self.out).unwrap_or(&rel))
    }

    /// Timing settings of one submission: the campaign's, with the profile's defaults.
    fn bench(&self, id: &str, ctx: &RunCtx) -> Result<Bench> {
        Bench {
            inputs: self.inputs(Some(id)),
            // Each submission's family decides its operations.
            ops: Vec::new(),
            trials: None,
            trial_target: None,
            iterations: None,
            cpu: None,
            allow_unfixed_host: self.allow_unfixed_host,
            quick: self.quick,
            // Per record: an interrupted bench step keeps the records it finished.
            resume: self.resume,
        }
        .with_profile(&ctx.profile)
    }

    /// The inputs of one submission's step (or of none: the image step).
    fn inputs(&self, id: Option<&str>) -> Inputs {
        let ids = id.map(|i| vec![i.to_owned()]).unwrap_or_default();
        let mut inputs = Inputs::for_ids(ids, self.target.clone(), self.out.clone(), self.system.clone());
        let given = |pairs: &[(String, camino::Utf8PathBuf)]| {
            pairs.iter().find(|(i, _)| Some(i.as_str()) == id).map(|(_, p)| p.clone())
        };
        inputs.archive = given(&self.archives);
        inputs.source_dir = given(&self.source_dirs);
        inputs
    }

    pub fn run(self, sh: &Shell) -> Result<()> {
        let profile = SystemProfile::load(&self.system)?;
        let subs = profile.ids(&self.ids).iter().map(|id| Submission::load(id)).collect::<Result<Vec<_>>>()?;
        for (id, _) in self.archives.iter().chain(&self.source_dirs) {
            if !subs.iter().any(|s| &s.id == id) {
                bail!("--archive/--source-dir name {id}, which is not in this campaign");
            }
        }
        let layout = Layout::new(&self.out, &profile.evidence_name(profile.arch(self.target.arch)));
        let mut steps = vec![Step::Image];
        for sub in &subs {
            steps.push(Step::Verify(sub.id.clone()));
            if !self.no_bench {
                steps.push(Step::Bench(sub.id.clone()));
                if !self.no_profile && sub.profile.is_some() {
                    steps.push(Step::Profile(sub.id.clone()));
                }
            }
        }
        let total = steps.len();
        let campaign_start = Instant::now();
        let mut state = State { profile: profile.clone(), ctx: None, gate: None };
        let mut durations: Vec<(Step, f64)> = Vec::new();
        let mut failed = Vec::new();
        let mut unverified = std::collections::BTreeSet::new();
        for (n, step) in steps.iter().enumerate() {
            let label = format!("[{}/{total}] {step}", n + 1);
            let sub = subs
                .iter()
                .find(|s| matches!(step, Step::Verify(id) | Step::Bench(id) | Step::Profile(id) if *id == s.id));
            if let Step::Bench(id) | Step::Profile(id) = step {
                if unverified.contains(id) {
                    crate::say!("{label}: skipped, verify {id} did not pass (no timing without passing KATs)");
                    continue;
                }
            }
            let done = self.resume
                && match (step, sub) {
                    (Step::Verify(_), Some(s)) => self.verify_done(&layout, s),
                    (Step::Bench(_), Some(s)) => self.bench_done(&layout, s),
                    (Step::Profile(_), Some(s)) => self.profile_done(&layout, s),
                    _ => false,
                };
            if done {
                crate::say!("{label}: evidence present and indexed, skipped (--resume)");
                continue;
            }
            crate::say!("{label} ...");
            let t = Instant::now();
            let result = self.run_step(sh, step, &mut state);
            let secs = t.elapsed().as_secs_f64();
            durations.push((step.clone(), secs));
            let left = estimate_left(&durations, &steps[n + 1..]);
            match result {
                Ok(()) => crate::say!("{label}: done in {secs:.1} s; about {left:.0} s left"),
                Err(e) if e.is::<Interrupted>() => return Err(e),
                Err(e) => {
                    crate::say!("{label}: FAILED after {secs:.1} s: {e:#}");
                    failed.push(format!("{step} ({e})"));
                    if let Step::Verify(id) = step {
                        unverified.insert(id.clone());
                    }
                }
            }
        }
        // The index once, at the end (each verify also keeps it current per instance).
        evidence::reindex(&self.out)?;
        crate::say!("campaign on {} finished in {:.1} s", self.system, campaign_start.elapsed().as_secs_f64());
        if !failed.is_empty() {
            bail!("{} step(s) failed: {}", failed.len(), failed.join("; "));
        }
        Ok(())
    }

    /// One step, in the campaign's one run context (the image step makes it).
    fn run_step(&self, sh: &Shell, step: &Step, state: &mut State) -> Result<()> {
        match step {
            Step::Image => {
                let ctx = self.inputs(None).context(sh, state.profile.clone())?;
                if let Some(lock) = &ctx.env.lock {
                    crate::say!("  {} ({})", lock.tag, lock.gcc_version);
                }
                state.ctx = Some(ctx);
                Ok(())
            }
            Step::Verify(id) => {
                let ctx = state.ctx.as_ref().context("no toolchain image: the image step failed")?;
                let verify = Verify {
                    inputs: self.inputs(Some(id)),
                    kat_manifest: None,
                    timeout: KAT_TIMEOUT_SECS,
                    resume: self.resume,
                };
                let work = verify.inputs.obtain(sh, &ctx.profile, |s| verify.check(s))?;
                let failed = verify.verify_all(sh, ctx, &work)?;
                if !failed.is_empty() {
                    bail!("instances did not pass ({})", failed.join(", "));
                }
                Ok(())
            }
            Step::Bench(id) | Step::Profile(id) => {
                let ctx = state.ctx.as_ref().context("no toolchain image: the image step failed")?;
                let bench = self.bench(id, ctx)?;
                let gate = gate_once(&mut state.gate, &bench, ctx)?;
                let failures = if matches!(step, Step::Bench(_)) {
                    let work = bench.inputs.obtain(sh, &ctx.profile, |sub| bench.check(sub))?;
                    bench.bench_all(sh, ctx, &work, &gate)?
                } else {
                    let work = bench.inputs.obtain(sh, &ctx.profile, |sub| profile::check(&bench, sub))?;
                    profile::profile_all(&bench, sh, (ctx, &gate), &work)?
                };
                if !failures.is_empty() {
                    bail!("some instances could not be measured:\n  {}", failures.join("\n  "));
                }
                Ok(())
            }
        }
    }
}

/// What the steps of one campaign share.
struct State {
    profile: SystemProfile,
    ctx: Option<RunCtx>,
    gate: Option<Gate>,
}

/// The host gate, evaluated once per campaign.
fn gate_once(slot: &mut Option<Gate>, bench: &Bench, ctx: &RunCtx) -> Result<Gate> {
    match slot {
        Some(g) => Ok(g.clone()),
        None => Ok(slot.insert(bench.gate(&ctx.profile)?).clone()),
    }
}

/// Seconds left: each remaining step costs the mean of finished steps of its kind,
/// or of all finished steps when none of its kind has run yet.
fn estimate_left(done: &[(Step, f64)], remaining: &[Step]) -> f64 {
    let mean = |pred: &dyn Fn(&Step) -> bool| {
        let v: Vec<f64> = done.iter().filter(|(s, _)| pred(s)).map(|(_, d)| *d).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let all = mean(&|_| true).unwrap_or(0.0);
    remaining
        .iter()
        .map(|r| {
            let same = |s: &Step| std::mem::discriminant(s) == std::mem::discriminant(r);
            mean(&same).unwrap_or(all)
        })
        .sum::<f64>()
        .max(0.0) // an empty float sum is -0.0
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `campaign --out <out>` as parsed, and the local layout under it.
    fn campaign_in(out: &Utf8Path) -> (Campaign, Layout) {
        use clap::Parser;
        let x = crate::flags::Xtask::parse_from(["xtask", "campaign", "--out", out.as_str()]);
        let crate::flags::Cmd::Campaign(c) = x.cmd else { panic!() };
        (c, Layout::new(out, "local"))
    }

    #[test]
    fn a_profile_is_done_only_when_its_survey_covers_every_instance() {
        let t = tempfile::tempdir().unwrap();
        let out = Utf8Path::from_path(t.path()).unwrap();
        let (c, layout) = campaign_in(out);
        let sub = Submission::load("pqclean-ml-kem").unwrap();
        let golden = project::root().join("xtask/tests/golden/survey.json");
        let mut survey: Survey = crate::evidence::schema::read(&golden).unwrap().unwrap();
        assert_eq!(survey.instances.len(), 1, "the golden survey speaks for ML-KEM-512 only");
        crate::evidence::schema::write(&layout.survey(&sub.id), &survey).unwrap();
        evidence::write_index(out).unwrap();
        assert!(!c.profile_done(&layout, &sub), "an interrupted profile's survey is not a finished profile");
        for label in ["ML-KEM-768", "ML-KEM-1024"] {
            let mut i = survey.instances[0].clone();
            i.label = label.into();
            survey.instances.push(i);
        }
        crate::evidence::schema::write(&layout.survey(&sub.id), &survey).unwrap();
        evidence::write_index(out).unwrap();
        assert!(c.profile_done(&layout, &sub));
    }

    #[test]
    fn a_bench_is_done_when_every_operation_of_its_family_is_recorded() {
        let t = tempfile::tempdir().unwrap();
        let out = Utf8Path::from_path(t.path()).unwrap();
        let (c, layout) = campaign_in(out);
        let sub = Submission::load("pqclean-ml-dsa").unwrap();
        let golden = project::root().join("xtask/tests/golden/record.json");
        let record: crate::evidence::schema::Record = crate::evidence::schema::read(&golden).unwrap().unwrap();
        let ops = sub.family().unwrap().default_ops();
        assert_eq!(ops.len(), 4, "keygen, sign, verify, sign_msgs");
        for (n, inst) in sub.instances.iter().enumerate() {
            for (k, op) in ops.iter().enumerate() {
                if n == 2 && k == 3 {
                    continue; // ML-DSA-87 sign_msgs: not timed yet
                }
                let mut r = record.clone();
                (r.id, r.label, r.op) = (sub.id.clone(), inst.label.clone(), op.clone());
                crate::evidence::schema::write(&layout.record(&sub.id, &inst.label, op.name()), &r).unwrap();
            }
        }
        evidence::write_index(out).unwrap();
        assert!(!c.bench_done(&layout, &sub), "a signature's sign_msgs is one of its operations");
        let mut r = record.clone();
        (r.id, r.label, r.op) = (sub.id.clone(), "ML-DSA-87".into(), ops[3].clone());
        crate::evidence::schema::write(&layout.record(&sub.id, "ML-DSA-87", "sign_msgs"), &r).unwrap();
        evidence::write_index(out).unwrap();
        assert!(c.bench_done(&layout, &sub));
    }

    #[test]
    fn estimate_uses_the_mean_of_the_same_kind() {
        let done = vec![(Step::Image, 2.0), (Step::Verify("a".into()), 10.0), (Step::Bench("a".into()), 30.0)];
        let left = estimate_left(&done, &[Step::Verify("b".into()), Step::Bench("b".into())]);
        assert_eq!(left, 40.0);
        assert_eq!(estimate_left(&done[..1], &[Step::Verify("b".into())]), 2.0);
        assert_eq!(estimate_left(&[], &[Step::Image]), 0.0);
    }
}
