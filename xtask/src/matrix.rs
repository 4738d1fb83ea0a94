//! `cargo xtask list --matrix --sums FILE`: the GitHub Actions matrix of the campaign
//! workflow, from the manifests and the listing of the one place the operator keeps the
//! archives. One shard per candidate and architecture it builds on; each instance its
//! manifest marks `slow` in a shard of its own. A candidate runs when its pinned archive
//! (and the ICCS API package, when it takes its files) is in the listing, matched by
//! SHA-256 under any file name: the listing only chooses what to try, the shard checks
//! each archive's size and SHA-256 before extracting anything.

use std::collections::BTreeMap;

use anyhow::{bail, Context, Result};
use camino::Utf8Path;

use crate::compile::submission::{SourceSpec, Submission};
use crate::evidence::domain::Arch;

/// GitHub's hosted runner and the system profile of each architecture.
const RUNNERS: [(Arch, &str, &str); 2] =
    [(Arch::X86_64, "ubuntu-24.04", "gha-x86_64"), (Arch::Aarch64, "ubuntu-24.04-arm", "gha-aarch64")];

/// A workflow may run at most this many jobs from one matrix.
pub const MAX_JOBS: usize = 256;

/// One job of the matrix.
#[derive(Debug, Clone, serde::Serialize, PartialEq, Eq)]
pub struct Shard {
    pub submission: String,
    pub arch: String,
    pub runner: String,
    pub system: String,
    /// The evidence artifact's name: `shard-<id>[-<slow label>]-<arch>`.
    pub artifact: String,
    /// The instance labels, space-separated (`--instance` each); empty: every instance.
    pub instances: String,
    /// The archive's file name at the operator's location, as a URL path segment.
    pub archive: String,
    /// The ICCS API package's file name there (a URL path segment); empty when the
    /// candidate takes none.
    pub iccs: String,
}

/// The matrices of one run, one per architecture (each under GitHub's job limit).
#[derive(Debug, serde::Serialize)]
pub struct Matrices {
    pub x86_64: Include,
    pub aarch64: Include,
    /// Candidates left out, each with why.
    pub left_out: Vec<String>,
}

#[derive(Debug, serde::Serialize)]
pub struct Include {
    pub include: Vec<Shard>,
}

/// A `sha256sum` listing (`<hex>  <name>` or `<hex> *<name>`): SHA-256 → the file's
/// name as a URL path segment (percent-encoded: the pinned names hold spaces and
/// non-ASCII letters). A name with a `/`, `\\` or control character, or starting with
/// `.`, is refused.
pub fn parse_sums(text: &str) -> Result<BTreeMap<String, String>> {
    let mut sums = BTreeMap::new();
    for (n, line) in text.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
        let bad = || format!("line {}: {line:?} is not `<sha256>  <file name>`", n + 1);
        let (hex, name) = line.split_once(' ').with_context(bad)?;
        let name = name.strip_prefix(' ').or_else(|| name.strip_prefix('*')).with_context(bad)?;
        let hex: crate::sha::Sha256Hex = hex.parse().map_err(|_| anyhow::anyhow!(bad()))?;
        if name.is_empty() || name.starts_with('.') || name.chars().any(|c| c.is_control() || "/\\".contains(c)) {
            bail!("line {}: file name {name:?}: not a plain file name", n + 1);
        }
        sums.insert(hex.as_str().to_owned(), url_segment(name));
    }
    Ok(sums)
}

/// `C Hash.zip` → `C%20Hash.zip`: every byte but the URL's unreserved ones encoded.
fn url_segment(name: &str) -> String {
    let keep = |b: u8| b.is_ascii_alphanumeric() || b"-._~".contains(&b);
    name.bytes().map(|b| if keep(b) { char::from(b).to_string() } else { format!("%{b:02X}") }).collect()
}

/// The shards of `subs` whose archives `sums` holds, and why the others are left out.
pub fn matrices(subs: &[Submission], sums: &BTreeMap<String, String>, iccs_sha: &str) -> Matrices {
    let mut left_out = Vec::new();
    let mut shards = Vec::new();
    for sub in subs {
        match reachable(sub, sums, iccs_sha) {
            Ok(Some((archive, iccs))) => shards.extend(of(sub, &archive, &iccs)),
            Ok(None) => {}
            Err(why) => left_out.push(format!("{}: {why}", sub.id)),
        }
    }
    let on = |arch: &str| Include { include: shards.iter().filter(|s| s.arch == arch).cloned().collect() };
    Matrices { x86_64: on(Arch::X86_64.uname()), aarch64: on(Arch::Aarch64.uname()), left_out }
}

/// The archive's and the ICCS package's file names; None for a crate (not a candidate).
fn reachable(
    sub: &Submission,
    sums: &BTreeMap<String, String>,
    iccs_sha: &str,
) -> Result<Option<(String, String)>, String> {
    let SourceSpec::Archive { file, sha256, .. } = &sub.source else { return Ok(None) };
    if sub.nested_refusal().is_some() {
        return Err("its code sits in a nested archive (`list` says more)".into());
    }
    let archive = sums.get(sha256.as_str()).ok_or_else(|| format!("{file} is not at the archives location"))?;
    let iccs = match sub.takes_iccs() {
        true => sums.get(iccs_sha).cloned().ok_or("it takes the ICCS API package, not at the location")?,
        false => String::new(),
    };
    Ok(Some((archive.clone(), iccs)))
}

/// One candidate's shards: its instances but the slow ones, then each slow one alone, on
/// each architecture it builds there.
fn of(sub: &Submission, archive: &str, iccs: &str) -> Vec<Shard> {
    let mut shards = Vec::new();
    for (arch, runner, system) in RUNNERS {
        let here: Vec<_> = sub.instances.iter().filter(|i| sub.not_built_on(i, arch).is_none()).collect();
        let shard = |instances: String, artifact: String| Shard {
            submission: sub.id.clone(),
            arch: arch.uname().to_owned(),
            runner: runner.to_owned(),
            system: system.to_owned(),
            artifact: format!("shard-{artifact}-{}", arch.uname()),
            instances,
            archive: archive.to_owned(),
            iccs: iccs.to_owned(),
        };
        let fast: Vec<&str> = here.iter().filter(|i| !i.slow).map(|i| i.label.as_str()).collect();
        let whole = fast.len() == sub.instances.len();
        if !fast.is_empty() {
            shards.push(shard(if whole { String::new() } else { fast.join(" ") }, sub.id.clone()));
        }
        for i in here.iter().filter(|i| i.slow) {
            shards.push(shard(i.label.clone(), format!("{}-{}", sub.id, artifact_part(&i.label))));
        }
    }
    shards
}

/// A label as part of an artifact's name (no `/`, `:` or other specials).
fn artifact_part(label: &str) -> String {
    label.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect()
}

/// `list --matrix`: the matrices of every shipped manifest against the listing at `sums`.
pub fn of_listing(sums: &Utf8Path) -> Result<Matrices> {
    let text = std::fs::read_to_string(sums).with_context(|| format!("--sums {sums}: cannot read it"))?;
    let sums = parse_sums(&text).with_context(|| format!("--sums {sums}"))?;
    let subs = Submission::ids()?.iter().map(|id| Submission::load(id)).collect::<Result<Vec<_>>>()?;
    let pin = crate::compile::iccs::Pin::load()?;
    let m = matrices(&subs, &sums, pin.sha256.as_str());
    for (name, include) in [("x86_64", &m.x86_64), ("aarch64", &m.aarch64)] {
        if include.include.len() > MAX_JOBS {
            bail!("{} {name} shards: over GitHub's {MAX_JOBS} jobs of one matrix", include.include.len());
        }
    }
    Ok(m)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> Vec<Submission> {
        Submission::ids().unwrap().iter().map(|id| Submission::load(id).unwrap()).collect()
    }

    /// Every pinned archive (and the ICCS package) at the location, under its own name.
    fn every_archive(subs: &[Submission]) -> (BTreeMap<String, String>, String) {
        let pin = crate::compile::iccs::Pin::load().unwrap();
        let mut sums: BTreeMap<String, String> = subs
            .iter()
            .filter_map(|s| match &s.source {
                SourceSpec::Archive { file, sha256, .. } => Some((sha256.as_str().to_owned(), file.clone())),
                SourceSpec::Crate { .. } => None,
            })
            .collect();
        sums.insert(pin.sha256.as_str().to_owned(), pin.file.clone());
        (sums, pin.sha256.as_str().to_owned())
    }

    /// With every archive there: one shard per runnable candidate and architecture it
    /// builds on, plus one per slow instance there; each instance in exactly one shard.
    #[test]
    fn the_matrix_of_the_shipped_manifests_has_a_shard_per_runnable_candidate_and_architecture() {
        let subs = shipped();
        let (sums, iccs) = every_archive(&subs);
        let m = matrices(&subs, &sums, &iccs);
        let all: Vec<&Shard> = m.x86_64.include.iter().chain(&m.aarch64.include).collect();
        let runnable: Vec<&Submission> = subs
            .iter()
            .filter(|s| matches!(s.source, SourceSpec::Archive { .. }) && s.nested_refusal().is_none())
            .collect();
        assert_eq!(m.left_out.len(), subs.iter().filter(|s| s.nested_refusal().is_some()).count(), "{:?}", m.left_out);
        let mut expected = 0;
        for sub in &runnable {
            for arch in Arch::ALL {
                let here: Vec<_> = sub.instances.iter().filter(|i| sub.not_built_on(i, arch).is_none()).collect();
                let mine: Vec<&&Shard> =
                    all.iter().filter(|s| s.submission == sub.id && s.arch == arch.uname()).collect();
                let slow = here.iter().filter(|i| i.slow).count();
                let fast = usize::from(here.iter().any(|i| !i.slow));
                assert_eq!(mine.len(), fast + slow, "{} on {arch:?}", sub.id);
                expected += fast + slow;
                for i in &here {
                    let holding = mine
                        .iter()
                        .filter(|s| s.instances.is_empty() || s.instances.split(' ').any(|l| l == i.label))
                        .count();
                    assert_eq!(holding, 1, "{} {} on {arch:?}: in one shard", sub.id, i.label);
                    if i.slow {
                        assert!(mine.iter().any(|s| s.instances == i.label), "{}: a shard of its own", i.label);
                    }
                }
            }
        }
        assert_eq!(all.len(), expected);
        assert!(m.x86_64.include.len() <= MAX_JOBS && m.aarch64.include.len() <= MAX_JOBS);
        let names: std::collections::BTreeSet<&str> = all.iter().map(|s| s.artifact.as_str()).collect();
        assert_eq!(names.len(), all.len(), "artifact names are unique");
        assert!(all.iter().all(|s| !s.archive.is_empty()), "every shard names its archive");
        assert!(!all.iter().any(|s| s.submission.starts_with("pqclean")), "crates have their own job");
    }

    #[test]
    fn a_candidate_runs_only_with_its_archive_and_the_iccs_package_it_takes() {
        let subs = shipped();
        let (mut sums, iccs) = every_archive(&subs);
        let takes = subs.iter().find(|s| s.takes_iccs() && s.nested_refusal().is_none()).unwrap();
        let SourceSpec::Archive { sha256, .. } = &takes.source else { panic!() };
        // Under another name: found by SHA-256.
        sums.insert(sha256.as_str().to_owned(), "renamed.zip".into());
        let m = matrices(&subs, &sums, &iccs);
        assert!(m.x86_64.include.iter().any(|s| s.submission == takes.id && s.archive == "renamed.zip"));
        sums.remove(&iccs);
        let m = matrices(&subs, &sums, &iccs);
        assert!(!m.x86_64.include.iter().any(|s| s.submission == takes.id));
        assert!(m.left_out.iter().any(|w| w.starts_with(&takes.id) && w.contains("ICCS")), "{:?}", m.left_out);
        let m = matrices(&subs, &BTreeMap::new(), &iccs);
        assert!(m.x86_64.include.is_empty() && m.aarch64.include.is_empty());
    }

    /// The names go into URLs and shell variables: encoded, and a hostile listing's
    /// paths refused.
    #[test]
    fn a_listing_names_url_segments_and_refuses_paths() {
        let hex = "2c76bdd4e4df7829bf22fa4949a3c744b9af692425f6f2e5fae5317d41e366ae";
        let sums = parse_sums(&format!("{hex}  BRQC.zip\n{hex} *C Hash-α.zip\n\n")).unwrap();
        assert_eq!(sums.get(hex).map(String::as_str), Some("C%20Hash-%CE%B1.zip"), "the last line of one digest");
        assert_eq!(url_segment("$(id);`x`&a=b?.zip"), "%24%28id%29%3B%60x%60%26a%3Db%3F.zip");
        for name in ["../x.zip", "x/y.zip", ".hidden", "a\\b", "a\tb", ""] {
            assert!(parse_sums(&format!("{hex}  {name}\n")).is_err(), "{name:?}");
        }
        assert!(parse_sums("nothex  BRQC.zip\n").is_err());
        assert!(parse_sums(&format!("{hex}BRQC.zip\n")).is_err());
    }
}
