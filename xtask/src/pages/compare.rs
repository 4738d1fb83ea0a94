//! `cargo xtask compare A B`: the same operations in two evidence sets (or two systems
//! of one set), as ratios with both spreads. Figures are comparable only when they
//! differ in nothing but the machine: another compiler, image, library, CPU model,
//! counter or an emulated run is refused loudly, and when the user overrides, the
//! differences stand on the page beside the numbers.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anyhow::{bail, Context, Result};
use camino::Utf8PathBuf;
use xshell::Shell;

use crate::evidence::schema::{self, Record};
use crate::flags::Compare;
use crate::{pages::site, project};

/// One side: an evidence root and one of its systems.
#[derive(Debug, Clone)]
pub struct Side {
    pub root: Utf8PathBuf,
    pub system: String,
}

impl Side {
    /// `DIR` (with one system in it) or `DIR:SYSTEM`.
    pub fn parse(arg: &str) -> Result<Side> {
        let (dir, system) = match arg.rsplit_once(':') {
            Some((d, s)) if !s.contains('/') && !s.is_empty() => (d, Some(s.to_owned())),
            _ => (arg, None),
        };
        let root = Utf8PathBuf::from(dir);
        crate::evidence::refuse_unsafe(&root)?;
        let systems: Vec<String> = root
            .read_dir_utf8()
            .with_context(|| format!("cannot read evidence set {root}"))?
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()) && e.path().join("records").is_dir())
            .map(|e| e.file_name().to_owned())
            .collect();
        match system {
            Some(s) if systems.contains(&s) => Ok(Side { root, system: s }),
            Some(s) => bail!("{root} has no timing records for system {s} (it has: {})", systems.join(", ")),
            None if systems.len() == 1 => Ok(Side { root, system: systems[0].clone() }),
            None => bail!("{root} holds systems {}: name one as {root}:SYSTEM", systems.join(", ")),
        }
    }

    fn label(&self) -> String {
        format!("{}:{}", self.root.file_name().unwrap_or(self.root.as_str()), self.system)
    }

    /// Every timing record, keyed by (id, instance, operation).
    fn records(&self) -> Result<BTreeMap<(String, String, String), Record>> {
        let dir = self.root.join(&self.system).join("records");
        let mut out = BTreeMap::new();
        for id in dir.read_dir_utf8().with_context(|| format!("cannot read {dir}"))?.filter_map(Result::ok) {
            for f in id.path().read_dir_utf8()?.filter_map(Result::ok) {
                if !f.file_name().contains("__") {
                    continue;
                }
                if let Some(r) = schema::read::<Record>(f.path())? {
                    out.insert((r.id.clone(), r.label.clone(), r.op.name().to_owned()), r);
                }
            }
        }
        Ok(out)
    }
}

/// What makes two records of the same operation incomparable, as `what: A vs B`.
pub fn differences(a: &Record, b: &Record) -> Vec<String> {
    let mut d = Vec::new();
    let mut check = |what: &str, x: String, y: String| {
        if x != y {
            d.push(format!("{what}: {x} vs {y}"));
        }
    };
    check("compiler", a.toolchain.gcc_version.clone(), b.toolchain.gcc_version.clone());
    check("build tool", a.toolchain.cmake_version.clone(), b.toolchain.cmake_version.clone());
    check("architecture", a.toolchain.arch.uname().into(), b.toolchain.arch.uname().into());
    check("image", format!("{:?}", a.toolchain.image_id), format!("{:?}", b.toolchain.image_id));
    check("build commands", format!("{:?}", a.commands.build), format!("{:?}", b.commands.build));
    check("library sha256", a.library_sha256.clone(), b.library_sha256.clone());
    check("CPU model", a.environment.processor.clone(), b.environment.processor.clone());
    check("counter", format!("{:?}", a.counter.name), format!("{:?}", b.counter.name));
    check("emulated", a.emulated.to_string(), b.emulated.to_string());
    d
}

/// Records whose figures the host found far below its own reading are never compared,
/// whatever the flags.
fn refuse_not_credible(common: &[Key], (ra, rb): (&BTreeMap<Key, Record>, &BTreeMap<Key, Record>)) -> Result<()> {
    let bad: Vec<String> = common
        .iter()
        .flat_map(|k| [&ra[k], &rb[k]])
        .filter(|r| r.host_check.credibility == crate::evidence::schema::Credibility::NotCredible)
        .map(|r| {
            format!(
                "  - {} {} {} ({}): {}",
                r.id,
                r.label,
                r.op.name(),
                r.system,
                r.host_check.detail.as_deref().unwrap_or("")
            )
        })
        .collect();
    if !bad.is_empty() {
        bail!("refusing to compare: timing records marked not credible by the host's CPU check:\n{}", bad.join("\n"));
    }
    Ok(())
}

/// Spread of a record's kept trials: (min, max) time per operation over the median.
fn spread(r: &Record) -> (f64, f64) {
    let median = r.aggregate.median_trial_ns.max(1e-9);
    let v: Vec<f64> = r.trials.iter().filter(|t| !t.trial.replaced).map(|t| t.trial.ns_per_op() / median).collect();
    (v.iter().copied().fold(f64::INFINITY, f64::min), v.iter().copied().fold(f64::NEG_INFINITY, f64::max))
}

impl Compare {
    pub fn run(self, _sh: &Shell) -> Result<()> {
        let (a, b) = (Side::parse(self.a.as_str())?, Side::parse(self.b.as_str())?);
        let (ra, rb) = (a.records()?, b.records()?);
        let common: Vec<_> = ra.keys().filter(|k| rb.contains_key(*k)).cloned().collect();
        if common.is_empty() {
            bail!("{} and {} have no (submission, instance, operation) in common", a.label(), b.label());
        }
        refuse_not_credible(&common, (&ra, &rb))?;
        let mut differ: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for k in &common {
            for d in differences(&ra[k], &rb[k]) {
                differ.entry(d).or_default().push(format!("{} {} {}", k.0, k.1, k.2));
            }
        }
        if !differ.is_empty() && !self.allow_differences {
            let list: Vec<String> = differ.keys().map(|d| format!("  - {d}")).collect();
            bail!(
                "refusing to compare {} with {}: the figures differ in more than the machine:\n{}\n\
                 Pass --allow-differences to compare anyway (the differences are then printed on the page).",
                a.label(),
                b.label(),
                list.join("\n")
            );
        }
        let page = page(&a, &b, &common, (&ra, &rb), &differ);
        print!("{page}");
        if let Some(out) = &self.out {
            std::fs::create_dir_all(out).with_context(|| format!("cannot create {out}"))?;
            project::write_atomic(&out.join("compare.md"), page.as_bytes())?;
            let html = html(&page, &common, (&ra, &rb), [&a.label(), &b.label()]);
            project::write_atomic(&out.join("compare.html"), html.as_bytes())?;
            crate::say!("comparison written to {out}/compare.md and compare.html");
        }
        Ok(())
    }
}

type Key = (String, String, String);

/// The page as HTML, with A and B of each (instance, operation) side by side.
fn html(
    md: &str,
    common: &[Key],
    (ra, rb): (&BTreeMap<Key, Record>, &BTreeMap<Key, Record>),
    sides: [&str; 2],
) -> String {
    let groups: Vec<(String, Vec<Option<f64>>)> = common
        .iter()
        .map(|k| (format!("{} {}", k.1, k.2), vec![Some(ra[k].aggregate.mean_ns), Some(rb[k].aggregate.mean_ns)]))
        .collect();
    let chart = format!(
        "<figure>\n{}<figcaption>Mean time per operation, A and B side by side (log scale), from the table \
         above.</figcaption>\n</figure>\n",
        site::bars(&groups, &sides)
    );
    let mut h = site::head(md.lines().next().unwrap_or("Comparison").trim_start_matches("# "));
    h.push_str(&site::markdown_to_html(md, ""));
    h.push_str(&chart);
    h.push_str("</body>\n</html>\n");
    h
}

fn page(
    a: &Side,
    b: &Side,
    common: &[Key],
    (ra, rb): (&BTreeMap<Key, Record>, &BTreeMap<Key, Record>),
    differ: &BTreeMap<String, Vec<String>>,
) -> String {
    let mut p = format!("# Comparison: {} (A) and {} (B)\n\n", a.label(), b.label());
    if !differ.is_empty() {
        p.push_str("WARNING: compared with --allow-differences: these figures differ in more than the machine.\n\n");
        for (d, ops) in differ {
            let _ = writeln!(p, "- {d} ({} operations)", ops.len());
        }
        p.push('\n');
    }
    p.push_str("| submission | instance | operation | A mean time | B mean time | B / A | A spread | B spread |\n");
    p.push_str("|---|---|---|---|---|---|---|---|\n");
    for k in common {
        let (x, y) = (&ra[k], &rb[k]);
        let ((a0, a1), (b0, b1)) = (spread(x), spread(y));
        let _ = writeln!(
            p,
            "| {} | {} | {} | {} | {} | {:.3} | {a0:.3}–{a1:.3} | {b0:.3}–{b1:.3} |",
            k.0,
            k.1,
            k.2,
            crate::measure::stats::human_time(x.aggregate.mean_ns),
            crate::measure::stats::human_time(y.aggregate.mean_ns),
            y.aggregate.mean_ns / x.aggregate.mean_ns
        );
    }
    if common.iter().any(|k| ra[k].emulated || rb[k].emulated) {
        p.push_str("\nOne side ran under emulation: its times are not measurements of that architecture.\n");
    }
    p.push_str("\nSpread: fastest and slowest kept trial over the median trial of the same record.\n");
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_difference_but_the_machine_is_named() {
        let golden = crate::project::root().join("xtask/tests/golden/record.json");
        let a: Record = schema::read(&golden).unwrap().unwrap();
        assert!(differences(&a, &a.clone()).is_empty(), "the same record is comparable with itself");
        let mut b = a.clone();
        b.environment.machine = "another machine".into();
        assert!(differences(&a, &b).is_empty(), "another machine is the point of comparing");
        b.toolchain.gcc_version = "gcc 15".into();
        b.library_sha256 = "0".repeat(64);
        b.emulated = true;
        let d = differences(&a, &b);
        assert_eq!(d.len(), 3, "{d:?}");
        assert!(d[0].starts_with("compiler: gcc (Debian 14.2.0-19) 14.2.0 vs gcc 15"), "{d:?}");
        assert!(d.iter().any(|x| x.starts_with("library sha256")) && d.iter().any(|x| x == "emulated: false vs true"));
    }

    #[test]
    fn records_the_host_found_not_credible_are_never_compared() {
        let golden = crate::project::root().join("xtask/tests/golden/record.json");
        let a: Record = schema::read(&golden).unwrap().unwrap();
        let key: Key = (a.id.clone(), a.label.clone(), a.op.name().to_owned());
        let mut b = a.clone();
        let ra = BTreeMap::from([(key.clone(), a)]);
        assert!(
            refuse_not_credible(std::slice::from_ref(&key), (&ra, &BTreeMap::from([(key.clone(), b.clone())]))).is_ok()
        );
        b.host_check.credibility = crate::evidence::schema::Credibility::NotCredible;
        let rb = BTreeMap::from([(key.clone(), b)]);
        let e = refuse_not_credible(&[key], (&ra, &rb)).unwrap_err().to_string();
        assert!(e.contains("not credible") && e.contains("ML-KEM-512"), "{e}");
    }
}
