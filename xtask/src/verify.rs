//! `cargo xtask verify`: build every instance in the pinned toolchain, generate
//! its KATs and check their digests against kat/<id>/kat.sha256.

use std::time::Duration;

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use serde::Serialize;
use xshell::Shell;

use crate::builder::{self, BuildEnv, Built, ToolchainRecord};
use crate::engine::{Limits, Outcome, Sandbox};
use crate::evidence::Layout;
use crate::flags::Verify;
use crate::kat::{self, Manifest};
use crate::project;
use crate::sources::{self, Provenance, Source};
use crate::submission::{Instance, Submission};
use crate::systems::SystemProfile;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Pass,
    Mismatch,
    Nokat,
    Buildfail,
    Cryptofail,
    Overflow,
    Loadfail,
    Timeout,
    Crash,
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = serde_json::to_value(self).ok().and_then(|v| v.as_str().map(str::to_owned)).unwrap_or_default();
        f.pad(&s)
    }
}

impl Status {
    /// Exit-code contract of KAT programs (see drivers/README.md): 3 = guard bytes
    /// overwritten, 127 = the dynamic loader failed, other non-zero = a KEM call failed.
    fn from_run(outcome: Outcome) -> Option<Status> {
        match outcome {
            Outcome::Exited(0) => None,
            Outcome::Exited(3) => Some(Status::Overflow),
            Outcome::Exited(127) => Some(Status::Loadfail),
            Outcome::Exited(_) => Some(Status::Cryptofail),
            Outcome::TimedOut => Some(Status::Timeout),
            Outcome::Signalled(_) => Some(Status::Crash),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct InstanceResult {
    pub label: String,
    pub status: Status,
    pub flag_set: String,
    pub flags: Vec<String>,
    pub kat_file: Option<String>,
    pub mode: Option<kat::Mode>,
    pub records: Option<usize>,
    pub expected_sha256: Option<String>,
    pub actual_sha256: Option<String>,
    pub log: Option<String>,
    pub build_key: String,
    pub build_reused: bool,
    pub commands: Vec<Vec<String>>,
    pub run_command: Vec<String>,
    pub run_outcome: Option<String>,
    pub run_seconds: Option<f64>,
    pub message: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct Summary {
    pub id: String,
    pub name: String,
    pub system: String,
    pub system_profile: SystemProfile,
    pub harness_commit: String,
    pub started: String,
    pub finished: String,
    pub toolchain: ToolchainRecord,
    pub source: Provenance,
    pub patches: Vec<sources::PatchRecord>,
    pub kat_manifest: String,
    pub kat_manifest_sha256: String,
    pub limits: Limits,
    pub kat_timeout_secs: u64,
    pub instances: Vec<InstanceResult>,
}

impl Verify {
    pub fn run(self, sh: &Shell) -> Result<()> {
        if self.kat_manifest.is_some() && self.inputs.ids.len() != 1 {
            bail!("--kat-manifest applies to one submission at a time");
        }
        // KAT manifests are read with the sources, before any image work.
        let kat_path = |sub: &Submission| self.kat_manifest.clone().unwrap_or_else(|| sub.kat_manifest_path());
        let run = self.inputs.prepare(sh, |sub| Manifest::load(&kat_path(sub)).map(drop))?;
        let mut failed = Vec::new();
        for (sub, src) in &run.work {
            let manifest = Manifest::load(&kat_path(sub))?;
            let summary = self.verify_submission(sh, &run.env, &run.layout, sub, &manifest, src, &run.profile)?;
            let bad = summary.instances.iter().filter(|i| i.status != Status::Pass).count();
            if bad > 0 {
                failed.push(format!("{}: {bad} of {}", sub.id, summary.instances.len()));
            }
        }
        crate::evidence::reindex(&self.inputs.out)?;
        if !failed.is_empty() {
            bail!("instances did not pass ({})", failed.join(", "));
        }
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    pub fn verify_submission(
        &self,
        sh: &Shell,
        env: &BuildEnv,
        layout: &Layout,
        sub: &Submission,
        manifest: &Manifest,
        src: &Source,
        profile: &SystemProfile,
    ) -> Result<Summary> {
        let started = project::now_utc();
        let instances: Vec<&Instance> = sub.instances.iter().filter(|i| self.inputs.selects(i)).collect();
        if instances.is_empty() {
            bail!("{}: no instance matches {:?}", sub.id, self.inputs.instances);
        }
        let sb = env.sandbox(sh, sub, &src.root, &Limits::default())?;
        let tc = env.record(sh, &sb)?;
        println!(
            "{} ({}): {} on {} [{}], source {}{}",
            sub.id,
            sub.name,
            tc.gcc_version,
            tc.arch.uname(),
            tc.image.as_deref().unwrap_or("host, unpinned"),
            src.provenance,
            sources::patch_note(&src.patches)
        );
        std::fs::create_dir_all(layout.kat_dir(&sub.id))?;
        let mut results = Vec::new();
        for inst in instances {
            let r = self.verify_instance(sh, env, &tc, &sb, layout, sub, inst, src, manifest)?;
            println!(
                "  {:<18} {:<14} {:<10} {}  [{}]{}",
                r.label,
                tc.toolchain,
                r.status,
                r.actual_sha256.as_deref().map(short).unwrap_or("-"),
                r.flag_set,
                if r.build_reused { " (build reused)" } else { "" }
            );
            if let Some(m) = &r.message {
                for line in m.lines() {
                    println!("      {line}");
                }
            }
            results.push(r);
        }
        drop(sb);
        let summary = Summary {
            id: sub.id.clone(),
            name: sub.name.clone(),
            system: self.inputs.system.clone(),
            system_profile: profile.clone(),
            harness_commit: project::harness_commit(sh),
            started,
            finished: project::now_utc(),
            toolchain: tc,
            source: src.provenance.clone(),
            patches: src.patches.clone(),
            kat_manifest: manifest.path.to_string(),
            kat_manifest_sha256: project::sha256_file(&manifest.path)?,
            limits: Limits::default(),
            kat_timeout_secs: self.timeout,
            instances: results,
        };
        project::write_json(&layout.kat_summary(&sub.id), &summary)?;
        Ok(summary)
    }

    #[allow(clippy::too_many_arguments)]
    fn verify_instance(
        &self,
        sh: &Shell,
        env: &BuildEnv,
        tc: &ToolchainRecord,
        sb: &Sandbox,
        layout: &Layout,
        sub: &Submission,
        inst: &Instance,
        src: &Source,
        manifest: &Manifest,
    ) -> Result<InstanceResult> {
        let entry = manifest.entry(&inst.label);
        let (plan, key, reused, failed) = match builder::ensure(sh, env, tc, sb, sub, inst, src, self.inputs.rebuild)? {
            Built::Ok(b) => (b.plan, b.key, b.reused, None),
            Built::Failed { plan, key, log } => (plan, key, false, Some(log)),
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
            build_reused: reused,
            commands: plan.steps.iter().map(|s| s.argv.clone()).collect(),
            run_command: plan.run.clone(),
            run_outcome: None,
            run_seconds: None,
            message: None,
        };
        if let Some(log) = failed {
            std::fs::write(layout.build_log(&sub.id, &inst.label), &log)?;
            r.status = Status::Buildfail;
            r.message = Some(format!(
                "build failed with the {} flags; compiler output in {}:\n{}",
                plan.flag_set,
                layout.build_log(&sub.id, &inst.label),
                tail(&log, 12)
            ));
            return Ok(r);
        }
        let Some(entry) = entry else {
            r.status = Status::Nokat;
            r.message = Some(format!("no line for {} in {}", inst.label, manifest.path));
            return Ok(r);
        };
        let exec = sb.exec(sh, Utf8Path::new(&plan.workdir), &plan.run, Duration::from_secs(self.timeout))?;
        r.run_outcome = Some(exec.outcome.to_string());
        r.run_seconds = Some(exec.wall.as_secs_f64());
        let log_path = layout.kat_log(&sub.id, &inst.label);
        std::fs::write(&log_path, &exec.stdout).with_context(|| format!("cannot write {log_path}"))?;
        r.log = Some(log_path.to_string());
        if let Some(status) = Status::from_run(exec.outcome) {
            r.status = status;
            r.message = Some(format!(
                "KAT program {}; stderr:\n{}",
                exec.outcome,
                tail(&String::from_utf8_lossy(&exec.stderr), 12)
            ));
            return Ok(r);
        }
        let actual = kat::digest(&exec.stdout, entry);
        r.actual_sha256 = Some(actual.clone());
        if actual != entry.sha256 {
            r.status = Status::Mismatch;
            r.message = Some(mismatch_message(entry, &actual, &exec.stdout, src, inst, sub));
        }
        Ok(r)
    }
}

fn mismatch_message(
    entry: &kat::Entry,
    actual: &str,
    text: &[u8],
    src: &Source,
    inst: &Instance,
    sub: &Submission,
) -> String {
    let mut m = format!("expected sha256 {}\nactual   sha256 {actual}", entry.sha256);
    let reference: Option<Utf8PathBuf> = sub.kat.reference.as_ref().map(|r| src.root.join(inst.expand(r)));
    let Some(path) = reference else {
        m.push_str("\nno reference KAT text ships with this source, so no record can be compared");
        return m;
    };
    let Ok(reference) = std::fs::read(&path) else {
        m.push_str(&format!("\nthe reference KAT text {path} is missing, so no record can be compared"));
        return m;
    };
    if kat::digest(&reference, entry) != entry.sha256 {
        m.push_str(&format!("\n{path} does not hash to the expected digest either; no record comparison"));
        return m;
    }
    match kat::first_differing_record(&reference, text, entry.mode) {
        Some((_, want, got)) => m.push_str(&format!(
            "\nfirst differing record (reference {path}):\n--- expected\n{}--- generated\n{}",
            tail(&want, 16),
            tail(&got, 16)
        )),
        None => m.push_str("\nthe generated text equals the reference text outside the covered records"),
    }
    m
}

fn short(d: &str) -> &str {
    &d[..16.min(d.len())]
}

fn tail(text: &str, n: usize) -> String {
    let lines: Vec<&str> = text.lines().collect();
    let start = lines.len().saturating_sub(n);
    let mut s = lines[start..].join("\n");
    s.push('\n');
    s
}
