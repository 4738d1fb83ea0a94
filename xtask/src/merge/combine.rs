//! The per-submission files that several shards of one submission each write (a
//! submission split by instances: each slow instance in a shard of its own), combined
//! into one file when they are parts of one run; any other file two shards hold must be
//! the same bytes (merge's rule). Which files these are comes from `evidence::Layout`:
//! `verify` writes the KAT summary, `bench` the environment manifest and the size audit;
//! every other file of the layout is one instance's (logs, records, profiles, ct) or is
//! not written by a shard (the page, the survey of `profile`) and so falls under the
//! same-bytes rule.

use anyhow::{bail, Context, Result};
use camino::{Utf8Path, Utf8PathBuf};
use serde::Serialize;

use crate::evidence::schema::{self, Disagreement, Environment, Evidence, InstanceResult, SizeAudit, Summary};
use crate::evidence::Layout;

/// A per-submission file merge may combine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Summary,
    Environment,
    SizeAudit,
}

/// What `path` (relative to the evidence root) is, by the layout: one of the combinable
/// files, with its submission, or None.
pub(super) fn kind(path: &str) -> Option<(Kind, String)> {
    let parts: Vec<&str> = path.split('/').collect();
    let [system, _, id, _] = parts[..] else { return None };
    let layout = Layout::new(Utf8Path::new(""), system);
    [
        (Kind::Summary, layout.kat_summary(id)),
        (Kind::Environment, layout.environment(id)),
        (Kind::SizeAudit, layout.size_audit(id)),
    ]
    .into_iter()
    .find(|(_, p)| p.as_str() == path)
    .map(|(k, _)| (k, id.to_owned()))
}

/// The copies of `path` in `shards` (each shard already checked against its index) as
/// one file's text; `order` is the submission's instance labels in manifest order.
pub(super) fn combine(kind: Kind, path: &str, shards: &[&Utf8PathBuf], order: &[String]) -> Result<String> {
    Ok(match kind {
        Kind::Summary => schema::text(&summaries(read_all(path, shards)?, order)?),
        Kind::Environment => schema::text(&environments(read_all(path, shards)?)?),
        Kind::SizeAudit => schema::text(&audits(read_all(path, shards)?)?),
    })
}

fn read_all<T: Evidence>(path: &str, shards: &[&Utf8PathBuf]) -> Result<Vec<(Utf8PathBuf, T)>> {
    shards
        .iter()
        .map(|shard| {
            let value = schema::read(&shard.join(path))?.with_context(|| format!("{shard}/{path} vanished"))?;
            Ok(((*shard).clone(), value))
        })
        .collect()
}

/// KAT summaries of one submission from several shards are one summary when they are
/// one run's parts:
/// - `instances`: the union, in the submission's manifest order. An instance in more than
///   one summary must be the same result in each (one copy kept); otherwise refused, as
///   the shards disagree on what happened.
/// - `started`: the earliest; `finished`: the latest.
/// - every other field (schema, id, name, system, system profile, harness commit,
///   toolchain and image, source and its archive digest, patches, KAT manifest and its
///   digest, limits, timeouts; and any field added later) must be equal, else refused
///   naming the field: results of two toolchains, sources, harnesses or limits are no
///   one run.
///
/// Statuses are taken as they are here: merge derives every PASS again from its log,
/// in each shard and in the merged set.
pub(super) fn summaries(copies: Vec<(Utf8PathBuf, Summary)>, order: &[String]) -> Result<Summary> {
    let mut copies = copies.into_iter();
    let (first_shard, mut out) = copies.next().context("no summary to combine")?;
    let mut from: Vec<(String, Utf8PathBuf)> =
        out.instances.iter().map(|i| (i.label.clone(), first_shard.clone())).collect();
    for (shard, s) in copies {
        agree(&out, &s, &["instances", "started", "finished"]).with_context(|| disagree(&first_shard, &shard))?;
        out.started = out.started.clone().min(s.started.clone());
        out.finished = out.finished.clone().max(s.finished.clone());
        for r in s.instances {
            match out.instances.iter().find(|i| i.label == r.label) {
                Some(earlier) if same(earlier, &r)? => {}
                Some(earlier) => {
                    let other = &from.iter().find(|(l, _)| *l == r.label).expect("every kept label has its shard").1;
                    bail!(
                        "instance {} is in both {other} ({}) and {shard} ({}) with different results",
                        r.label,
                        earlier.status,
                        r.status
                    );
                }
                None => {
                    from.push((r.label.clone(), shard.clone()));
                    out.instances.push(r);
                }
            }
        }
    }
    sort_instances(&mut out.instances, order);
    Ok(out)
}

/// Manifest order; a label the manifest does not name (an older manifest) after the
/// others, by label, so the result does not depend on the order of the shards.
fn sort_instances(instances: &mut [InstanceResult], order: &[String]) {
    instances.sort_by_key(|i| (order.iter().position(|l| *l == i.label).unwrap_or(usize::MAX), i.label.clone()));
}

/// Environment manifests of one submission's bench runs on several shards are one
/// manifest when they describe the same machine and gate:
/// - `campaign_start`: the earliest; `campaign_end`: the latest, or none when any run
///   did not finish.
/// - `warnings`: every shard's, each once, in the order first seen.
/// - every other field (schema, system profile, processor, logical CPUs, machine,
///   clock, memory, OS, kernel, compiler, build tool, virtualization, gate; and any
///   field added later) must be equal, else refused naming the field: the manifest
///   stands for one machine, and two machines' records are two sets. Each timing
///   record carries its own environment regardless.
pub(super) fn environments(copies: Vec<(Utf8PathBuf, Environment)>) -> Result<Environment> {
    let mut copies = copies.into_iter();
    let (first_shard, mut out) = copies.next().context("no environment manifest to combine")?;
    for (shard, e) in copies {
        agree(&out, &e, &["campaign_start", "campaign_end", "warnings"])
            .with_context(|| disagree(&first_shard, &shard))?;
        out.campaign_start = out.campaign_start.clone().min(e.campaign_start);
        out.campaign_end = match (out.campaign_end.take(), e.campaign_end) {
            (Some(a), Some(b)) => Some(a.max(b)),
            _ => None,
        };
        for w in e.warnings {
            if !out.warnings.contains(&w) {
                out.warnings.push(w);
            }
        }
    }
    Ok(out)
}

/// Size audits of one submission from several shards: the union of their
/// disagreements (each found on one instance's API), each once, sorted by instance and
/// field; two different disagreements on the same instance and field are refused. The
/// schema and id must be equal.
pub(super) fn audits(copies: Vec<(Utf8PathBuf, SizeAudit)>) -> Result<SizeAudit> {
    let mut copies = copies.into_iter();
    let (first_shard, mut out) = copies.next().context("no size audit to combine")?;
    for (shard, a) in copies {
        agree(&out, &a, &["disagreements"]).with_context(|| disagree(&first_shard, &shard))?;
        for d in a.disagreements {
            let key = |x: &Disagreement| (x.instance.clone(), x.field.clone());
            match out.disagreements.iter().find(|x| key(x) == key(&d)) {
                Some(x) if same(x, &d)? => {}
                Some(_) => bail!("the size audit of {} {} differs between the shards ({shard})", d.instance, d.field),
                None => out.disagreements.push(d),
            }
        }
    }
    out.disagreements.sort_by(|a, b| (&a.instance, &a.field).cmp(&(&b.instance, &b.field)));
    Ok(out)
}

fn disagree(a: &Utf8Path, b: &Utf8Path) -> String {
    format!("{a} and {b} are not parts of one run")
}

/// Two values serialized alike (the evidence text is the comparison: a field a type
/// compares loosely, or one added later, still counts).
fn same<T: Serialize>(a: &T, b: &T) -> Result<bool> {
    Ok(serde_json::to_value(a)? == serde_json::to_value(b)?)
}

/// Every field of `a` and `b` but `except` equal; else the fields that differ, named.
fn agree<T: Serialize>(a: &T, b: &T, except: &[&str]) -> Result<()> {
    let differ = crate::evidence::schema::differing_fields(a, b, except)?;
    if !differ.is_empty() {
        bail!("they differ in {}", differ.join(", "));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::evidence::domain::Provenance;
    use crate::kat::verify::Status;

    fn golden<T: Evidence>(file: &str) -> T {
        schema::read(&Utf8Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(file)).unwrap().unwrap()
    }

    fn labels(s: &Summary) -> Vec<String> {
        s.instances.iter().map(|i| i.label.clone()).collect()
    }

    /// The golden summary split in two (first instance / the rest, the later shard
    /// given first): combined, the same summary, in manifest order.
    fn halves() -> (Summary, Summary, Summary) {
        let whole: Summary = golden("summary.json");
        assert!(whole.instances.len() >= 3);
        let (mut a, mut b) = (whole.clone(), whole.clone());
        a.instances.truncate(1);
        b.instances.remove(0);
        a.finished = "0000".into();
        b.started = "9999".into();
        (whole, a, b)
    }

    fn two(a: &Summary, b: &Summary) -> Result<Summary> {
        let order = labels(&golden::<Summary>("summary.json"));
        summaries(vec![("b".into(), b.clone()), ("a".into(), a.clone())], &order)
    }

    #[test]
    fn summaries_of_disjoint_instances_combine_into_the_whole() {
        let (whole, a, b) = halves();
        let got = two(&a, &b).unwrap();
        assert_eq!(schema::text(&got), schema::text(&whole));
        // A shard that holds an instance the other has too, with the same result: one copy.
        let mut b2 = b.clone();
        b2.instances.insert(0, a.instances[0].clone());
        assert_eq!(schema::text(&two(&a, &b2).unwrap()), schema::text(&whole));
    }

    #[test]
    fn the_same_instance_with_another_result_is_refused() {
        let (_, a, mut b) = halves();
        let mut claimed = a.instances[0].clone();
        claimed.status = Status::Mismatch;
        b.instances.push(claimed);
        let e = format!("{:#}", two(&a, &b).unwrap_err());
        let label = &a.instances[0].label;
        assert!(
            e.contains(&format!("instance {label} is in both b (MISMATCH) and a (PASS) with different results")),
            "{e}"
        );
        // Only a detail differs (the seconds it took): still another result.
        let (_, a, mut b) = halves();
        let mut claimed = a.instances[0].clone();
        claimed.run_seconds = Some(claimed.run_seconds.unwrap_or(0.0) + 1.0);
        b.instances.push(claimed);
        assert!(format!("{:#}", two(&a, &b).unwrap_err()).contains("with different results"));
    }

    #[test]
    fn summaries_that_are_not_one_run_are_refused_naming_the_field() {
        for (field, edit) in [
            ("toolchain", (|s: &mut Summary| s.toolchain.gcc_version.push('x')) as fn(&mut Summary)),
            ("harness_commit", |s| s.harness_commit.push('x')),
            ("source", |s| {
                s.source = Provenance::Archive { file: "other.zip".into(), sha256: "00".repeat(32).parse().unwrap() }
            }),
            ("kat_manifest_sha256", |s| s.kat_manifest_sha256.push('0')),
            ("kat_timeout_secs", |s| s.kat_timeout_secs += 1),
        ] {
            let (_, a, mut b) = halves();
            edit(&mut b);
            let e = format!("{:#}", two(&a, &b).unwrap_err());
            assert!(e.contains("b and a are not parts of one run") && e.contains(&format!("differ in {field}")), "{e}");
        }
    }

    #[test]
    fn environments_combine_their_span_and_refuse_another_machine() {
        let base: Environment = golden("environment.json");
        let (mut a, mut b) = (base.clone(), base.clone());
        (a.campaign_start, a.campaign_end) = ("2026-11-30T08:00:00Z".into(), Some("2026-11-30T08:30:00Z".into()));
        (b.campaign_start, b.campaign_end) = ("2026-11-30T08:10:00Z".into(), Some("2026-11-30T09:00:00Z".into()));
        a.warnings = vec!["w1".into()];
        b.warnings = vec!["w2".into(), "w1".into()];
        let got = environments(vec![("a".into(), a.clone()), ("b".into(), b.clone())]).unwrap();
        assert_eq!(got.campaign_start, "2026-11-30T08:00:00Z");
        assert_eq!(got.campaign_end.as_deref(), Some("2026-11-30T09:00:00Z"));
        assert_eq!(got.warnings, ["w1", "w2"]);
        b.campaign_end = None;
        let got = environments(vec![("a".into(), a.clone()), ("b".into(), b.clone())]).unwrap();
        assert_eq!(got.campaign_end, None, "a run that did not finish leaves the span open");
        b.processor.push_str(" (another)");
        let e = format!("{:#}", environments(vec![("a".into(), a), ("b".into(), b)]).unwrap_err());
        assert!(e.contains("differ in processor"), "{e}");
    }

    #[test]
    fn size_audits_are_united_and_a_contradiction_is_refused() {
        let d = |instance: &str, api| Disagreement {
            id: "x".into(),
            instance: instance.into(),
            field: "public_key".into(),
            api: Some(api),
            catalog: Some(1),
            basis: None,
        };
        let audit = |ds: Vec<Disagreement>| SizeAudit { schema: 1, id: "x".into(), disagreements: ds };
        let got = audits(vec![("a".into(), audit(vec![d("B", 2)])), ("b".into(), audit(vec![d("A", 3), d("B", 2)]))]);
        let got: Vec<String> = got.unwrap().disagreements.iter().map(|d| d.instance.clone()).collect();
        assert_eq!(got, ["A", "B"]);
        let e = audits(vec![("a".into(), audit(vec![d("B", 2)])), ("b".into(), audit(vec![d("B", 5)]))]).unwrap_err();
        assert!(format!("{e:#}").contains("size audit of B public_key differs"), "{e:#}");
    }

    #[test]
    fn kinds_come_from_the_layout() {
        assert_eq!(kind("x86_1/kat/kem-07/summary.json"), Some((Kind::Summary, "kem-07".into())));
        assert_eq!(kind("x86_1/records/kem-07/environment.json"), Some((Kind::Environment, "kem-07".into())));
        assert_eq!(kind("x86_1/records/kem-07/size_audit.json"), Some((Kind::SizeAudit, "kem-07".into())));
        for other in ["x86_1/kat/kem-07/a.log", "x86_1/profile/kem-07/survey.json", "kat/kem-07/summary.json"] {
            assert_eq!(kind(other), None, "{other}");
        }
    }
}
