//! Shards merged into one evidence set, on the golden evidence set
//! (`common/golden_set.rs`, no container): two shards that each hold one family, or one
//! system, merge into the whole set byte for byte; tampering is named; a shard that
//! fails its own check, a PASS whose log was changed and re-indexed, and conflicting
//! duplicates are refused. One small real verify shows that what `verify` writes is
//! what merge derives a PASS again from. A submission split by instances over two
//! shards (as the campaign workflow runs a slow instance alone) merges into the whole;
//! a shard that claims the other's instance with another result, one made with another
//! toolchain, and one whose PASS its log does not give are refused.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use camino::Utf8Path;
use common::golden_set::{self, checkout, xtask_in, BASELINE, HASH, IDS, KEM, SIG, SYSTEMS};
use common::{stdout, xtask};
use xtask::evidence::schema::{self, Summary};
use xtask::evidence::Layout;
use xtask::kat::verify::Status;

/// Every file below `root` with its bytes.
fn files(root: &Path) -> BTreeMap<String, Vec<u8>> {
    walkdir::WalkDir::new(root)
        .into_iter()
        .filter_map(std::result::Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| (e.path().strip_prefix(root).unwrap().to_str().unwrap().to_owned(), std::fs::read(e.path()).unwrap()))
        .collect()
}

fn s(p: &Path) -> &str {
    p.to_str().unwrap()
}

#[test]
fn shards_of_one_family_or_one_system_merge_into_the_whole_and_tampering_is_named() {
    let tmp = tempfile::tempdir().unwrap();
    let root = checkout(&tmp.path().join("checkout"));
    let t = |name: &str| tmp.path().join(name);
    golden_set::write(&t("whole"));
    golden_set::write_part(&t("kem"), &SYSTEMS, &[KEM]);
    golden_set::write_part(&t("sig"), &SYSTEMS, &[SIG]);
    golden_set::write_part(&t("hash"), &SYSTEMS, &[HASH, BASELINE]);
    golden_set::write_part(&t("kex"), &SYSTEMS, &[golden_set::KEX]);
    golden_set::write_part(&t("x86"), &["x86_1"], &IDS);
    golden_set::write_part(&t("arm"), &["arm_1"], &IDS);
    let whole = files(&t("whole"));
    assert!(whole.keys().any(|f| f.ends_with("ML-DSA-44__sign_msgs.json")) && whole.len() > 60, "{:?}", whole.keys());

    for (shards, merged) in [(&["kem", "sig", "hash", "kex"][..], "by-family"), (&["x86", "arm"][..], "by-system")] {
        let mut args = vec!["merge".to_owned()];
        args.extend(shards.iter().map(|a| s(&t(a)).to_owned()));
        args.extend(["--out".to_owned(), s(&t(merged)).to_owned()]);
        let m = xtask_in(&root, &args.iter().map(String::as_str).collect::<Vec<_>>());
        assert!(m.status.success(), "{merged}");
        let got = files(&t(merged));
        assert_eq!(got.keys().collect::<Vec<_>>(), whole.keys().collect::<Vec<_>>(), "{merged}");
        for (f, bytes) in &whole {
            assert!(got[f] == *bytes, "{merged}: {f} differs from the whole set's");
        }
    }
    let merged = t("by-family");
    assert!(xtask(&["evidence", "check", s(&merged)], None).status.success());
    // In the real checkout the same sets are refused: their KAT logs are not PQClean's
    // output (nor AFS-TrEDM's), and merge derives every PASS, of every KAT file, from its
    // log against kat/<id>/kat.sha256.
    let real = xtask(&["merge", s(&t("sig")), "--out", s(&t("real"))], None);
    let err = String::from_utf8_lossy(&real.stderr);
    assert!(!real.status.success() && err.contains("records PASS for ML-DSA-44; refused"), "{err}");
    assert!(err.contains("kat/pqclean-ml-dsa/kat.sha256 line 3 says 9a196e7fb32fbc93"), "{err}");
    assert!(!t("real").exists() || files(&t("real")).is_empty());
    let real = xtask(&["merge", s(&t("hash")), "--out", s(&t("real"))], None);
    let err = String::from_utf8_lossy(&real.stderr);
    assert!(err.contains("records PASS for AFS-TrEDM-512 (KAT_2_12_AFS-TrEDM-512.txt); refused"), "{err}");
    assert!(err.contains("kat/hash-01/kat.sha256 line 9 says 752b1b15dcbf9e6d"), "{err}");
    assert!(!t("real").exists() || files(&t("real")).is_empty());

    // One changed byte in one summary: named, non-zero exit.
    let victim = "x86_1/kat/pqclean-ml-dsa/summary.json";
    let original = std::fs::read(merged.join(victim)).unwrap();
    let mut bytes = original.clone();
    bytes[10] ^= 0x20;
    std::fs::write(merged.join(victim), bytes).unwrap();
    let bad = xtask(&["evidence", "check", s(&merged)], None);
    assert!(!bad.status.success());
    let text = stdout(&bad);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines[0], format!("changed  {victim}"));
    // The changed byte is in the key `schema`: the file is no summary of this harness.
    assert!(lines[1].starts_with("schema ") && lines[1].contains("is a KAT summary of schema none"), "{text}");
    assert_eq!(lines.len(), 2, "{text}");
    std::fs::write(merged.join(victim), &original).unwrap();

    // A shard that fails its own check is not merged; nor are conflicting duplicates.
    std::fs::write(merged.join("arm_1/new.txt"), "not indexed").unwrap();
    let refused = xtask_in(&root, &["merge", s(&merged), "--out", s(&t("m2"))]);
    assert!(!refused.status.success());
    assert!(String::from_utf8_lossy(&refused.stderr).contains("does not match its own index"));
    std::fs::remove_file(merged.join("arm_1/new.txt")).unwrap();
    xtask(&["evidence", "index", s(&merged)], None);
    let same = xtask_in(&root, &["merge", s(&t("sig")), s(&merged), "--out", s(&t("m3"))]);
    assert!(same.status.success(), "same files, same bytes: no conflict");

    // A PASS log changed and re-indexed: the PASS is derived again from it and refused.
    let log = "arm_1/kat/pqclean-ml-dsa/ML-DSA-44.log";
    let mut changed = std::fs::read(merged.join(log)).unwrap();
    changed[0] ^= 1;
    std::fs::write(merged.join(log), changed).unwrap();
    xtask(&["evidence", "index", s(&merged)], None);
    let m4 = t("m4");
    let forged = xtask_in(&root, &["merge", s(&t("kem")), s(&merged), "--out", s(&m4)]);
    let err = String::from_utf8_lossy(&forged.stderr);
    assert!(!forged.status.success() && err.contains("records PASS for ML-DSA-44; refused"), "{err}");
    assert!(err.contains("gives sha256"), "{err}");
    assert!(!m4.exists());
    std::fs::write(merged.join(log), &whole[log]).unwrap();
    // A summary that differs from the other shard's: a conflict, nothing merged.
    let summary = String::from_utf8(original).unwrap();
    let other = summary.replacen("\"harness_commit\": \"", "\"harness_commit\": \"other-", 1);
    std::fs::write(merged.join(victim), other).unwrap();
    xtask(&["evidence", "index", s(&merged)], None);
    let conflict = xtask_in(&root, &["merge", s(&t("sig")), s(&merged), "--out", s(&m4)]);
    assert!(!conflict.status.success());
    let err = String::from_utf8_lossy(&conflict.stderr);
    assert!(err.contains("conflicting duplicates") && err.contains(victim), "{err}");
    assert!(!m4.exists());
}

/// The one container run of this file, and why: the golden set is written by the
/// test's own builder, so only a real `verify` shows that the summary and KAT log it
/// writes (log names, digests, index) are what merge derives the PASS again from, and
/// that a real log changed by one bit is refused. One instance, its build cached.
#[test]
fn a_real_verify_merges_unchanged_and_its_changed_log_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, merged) = (tmp.path().join("a"), tmp.path().join("merged"));
    let v = xtask(&["verify", KEM, "--instance", "ML-KEM-512", "--engine", "podman", "--out", s(&a)], None);
    assert!(v.status.success());
    assert!(xtask(&["merge", s(&a), "--out", s(&merged)], None).status.success());
    let (shard, got) = (files(&a), files(&merged));
    assert!(shard.contains_key("local/kat/pqclean-ml-kem/ML-KEM-512.log"), "{:?}", shard.keys());
    assert!(shard == got, "a merge of one shard is that shard");

    let log = "local/kat/pqclean-ml-kem/ML-KEM-512.log";
    let mut changed = shard[log].clone();
    changed[0] ^= 1;
    std::fs::write(merged.join(log), changed).unwrap();
    xtask(&["evidence", "index", s(&merged)], None);
    let m2 = tmp.path().join("m2");
    let forged = xtask(&["merge", s(&merged), "--out", s(&m2)], None);
    let err = String::from_utf8_lossy(&forged.stderr);
    assert!(!forged.status.success() && err.contains("records PASS for ML-KEM-512; refused"), "{err}");
    assert!(err.contains("gives sha256") && err.contains("c70041a761e01cd6"), "{err}");
    assert!(!m2.exists());
}

/// A shard whose summary says PASS (the golden one, with the published digests of
/// `kat/pqclean-ml-kem/kat.sha256`) beside KAT logs that were never that text, then
/// re-indexed so its own index check passes: merge derives each PASS again from its
/// log and refuses the shard, naming the instance; nothing is merged. No container.
#[test]
fn a_shard_edited_to_pass_and_reindexed_is_refused() {
    let golden = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden/summary.json");
    for (forged, why) in [(Some("count = 0\nss = 00\n"), "gives sha256"), (Some(""), "is empty"), (None, "no KAT log")]
    {
        let tmp = tempfile::tempdir().unwrap();
        let shard = tmp.path().join("shard");
        let kat = shard.join("local/kat/pqclean-ml-kem");
        std::fs::create_dir_all(&kat).unwrap();
        std::fs::copy(&golden, kat.join("summary.json")).unwrap();
        for label in ["ML-KEM-512", "ML-KEM-768", "ML-KEM-1024"] {
            if let Some(text) = forged {
                std::fs::write(kat.join(format!("{label}.log")), text).unwrap();
            }
        }
        assert!(xtask(&["evidence", "index", s(&shard)], None).status.success());
        assert!(xtask(&["evidence", "check", s(&shard)], None).status.success());
        let out = tmp.path().join("merged");
        let m = xtask(&["merge", s(&shard), "--out", s(&out)], None);
        let err = String::from_utf8_lossy(&m.stderr);
        assert!(!m.status.success(), "{forged:?}: a forged PASS was merged");
        assert!(err.contains("records PASS for ML-KEM-512; refused") && err.contains(why), "{err}");
        assert!(files(&out).is_empty(), "nothing is merged");
    }
}

/// The golden set as two shards of a split campaign: `a` is the whole set but for the
/// last KEM instance on x86_1, `b` holds that instance alone (its KAT log, its records,
/// its summary, the submission's environment manifest and size audit), as a shard that
/// ran it alone would. Their summaries and manifests share the run's start and end.
fn split(a: &Path, b: &Path) -> (Layout, String) {
    golden_set::write(a);
    let label = golden_set::labels(KEM).pop().unwrap();
    let (la, lb) =
        (Layout::new(Utf8Path::from_path(a).unwrap(), "x86_1"), Layout::new(Utf8Path::from_path(b).unwrap(), "x86_1"));
    std::fs::create_dir_all(lb.kat_dir(KEM)).unwrap();
    std::fs::create_dir_all(lb.records_dir(KEM)).unwrap();
    std::fs::rename(la.kat_log(KEM, &label), lb.kat_log(KEM, &label)).unwrap();
    for op in golden_set::ops(KEM) {
        std::fs::rename(la.record(KEM, &label, op.name()), lb.record(KEM, &label, op.name())).unwrap();
    }
    std::fs::copy(la.size_audit(KEM), lb.size_audit(KEM)).unwrap();
    let whole = golden_set::summary("x86_1", KEM);
    let (mut sa, mut sb) = (whole.clone(), whole.clone());
    sa.instances.retain(|i| i.label != label);
    sb.instances.retain(|i| i.label == label);
    // a finished before the whole run did, b started after it began.
    (sa.finished, sb.started) = ("2026-11-30T08:49:30Z".into(), "2026-11-30T08:50:30Z".into());
    assert!(sa.finished < whole.finished && sb.started > whole.started, "{} {}", whole.started, whole.finished);
    let env = golden_set::environment("x86_1");
    let (mut ea, mut eb) = (env.clone(), env.clone());
    ea.campaign_end = Some(env.campaign_start.clone());
    eb.campaign_start = env.campaign_end.clone().unwrap();
    schema::write(&la.kat_summary(KEM), &sa).unwrap();
    schema::write(&lb.kat_summary(KEM), &sb).unwrap();
    schema::write(&la.environment(KEM), &ea).unwrap();
    schema::write(&lb.environment(KEM), &eb).unwrap();
    xtask::evidence::write_index(&la.out).unwrap();
    xtask::evidence::write_index(&lb.out).unwrap();
    (lb, label)
}

/// `b`'s KAT summary of the KEM edited by `edit`, and `b` indexed again (its own check
/// passes: only merge can refuse it).
fn edit_summary(b: &Layout, edit: impl FnOnce(&mut Summary)) {
    let mut s: Summary = schema::read(&b.kat_summary(KEM)).unwrap().unwrap();
    edit(&mut s);
    schema::write(&b.kat_summary(KEM), &s).unwrap();
    xtask::evidence::write_index(&b.out).unwrap();
    assert!(xtask(&["evidence", "check", b.out.as_str()], None).status.success());
}

#[test]
fn a_submission_split_by_instances_merges_into_the_whole_and_hostile_shards_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let root = checkout(&tmp.path().join("checkout"));
    let t = |name: &str| tmp.path().join(name);
    golden_set::write(&t("whole"));
    let (lb, label) = split(&t("a"), &t("b"));
    let merge = |shards: [&Path; 2], out: &str| {
        let m = xtask_in(&root, &["merge", s(shards[0]), s(shards[1]), "--out", s(&t(out))]);
        (m.status.success(), String::from_utf8_lossy(&m.stderr).into_owned())
    };
    // Either order: the whole set, byte for byte, and its own check passes.
    let whole = files(&t("whole"));
    for (shards, out) in [([t("a"), t("b")], "ab"), ([t("b"), t("a")], "ba")] {
        let (ok, err) = merge([&shards[0], &shards[1]], out);
        assert!(ok, "{err}");
        let got = files(&t(out));
        assert_eq!(got.keys().collect::<Vec<_>>(), whole.keys().collect::<Vec<_>>(), "{out}");
        for (f, bytes) in &whole {
            assert!(got[f] == *bytes, "{out}: {f} differs from the whole set's");
        }
        assert!(xtask(&["evidence", "check", s(&t(out))], None).status.success());
    }

    // b claims an instance a has, with another status: refused, naming both.
    let first = golden_set::labels(KEM)[0].clone();
    let saved = std::fs::read(lb.kat_summary(KEM)).unwrap();
    edit_summary(&lb, |s| {
        let mut claimed = golden_set::summary("x86_1", KEM).instances[0].clone();
        (claimed.status, claimed.actual_sha256) = (Status::Mismatch, None);
        s.instances.insert(0, claimed);
    });
    let (ok, err) = merge([&t("a"), &t("b")], "claim");
    assert!(!ok && err.contains("conflicting duplicates, nothing merged"), "{err}");
    assert!(err.contains(&format!("instance {first} is in both")) && err.contains("with different results"), "{err}");
    assert!(err.contains("x86_1/kat/pqclean-ml-kem/summary.json: cannot be combined"), "{err}");
    assert!(!t("claim").exists());

    // b made with another toolchain: not one run, refused naming the field.
    std::fs::write(lb.kat_summary(KEM), &saved).unwrap();
    edit_summary(&lb, |s| s.toolchain.gcc_version = "gcc (other) 99".into());
    let (ok, err) = merge([&t("a"), &t("b")], "toolchain");
    assert!(!ok && err.contains("are not parts of one run") && err.contains("differ in toolchain"), "{err}");
    assert!(!t("toolchain").exists());

    // b's environment manifest from another machine: refused, the path named.
    std::fs::write(lb.kat_summary(KEM), &saved).unwrap();
    let env_saved = std::fs::read(lb.environment(KEM)).unwrap();
    let mut e: schema::Environment = schema::read(&lb.environment(KEM)).unwrap().unwrap();
    e.processor = "another processor".into();
    schema::write(&lb.environment(KEM), &e).unwrap();
    xtask::evidence::write_index(&lb.out).unwrap();
    let (ok, err) = merge([&t("a"), &t("b")], "machine");
    assert!(!ok && err.contains("x86_1/records/pqclean-ml-kem/environment.json: cannot be combined"), "{err}");
    assert!(err.contains("differ in processor"), "{err}");
    std::fs::write(lb.environment(KEM), env_saved).unwrap();

    // b's summary says PASS for its instance but its log is another text, re-indexed:
    // the PASS is derived again from the log and refused, before anything is combined.
    let log = lb.kat_log(KEM, &label);
    let text = std::fs::read_to_string(&log).unwrap();
    std::fs::write(&log, text.replacen('0', "1", 1)).unwrap();
    xtask::evidence::write_index(&lb.out).unwrap();
    let (ok, err) = merge([&t("a"), &t("b")], "forged");
    assert!(
        !ok && err.contains(&format!("records PASS for {label}; refused")) && err.contains("gives sha256"),
        "{err}"
    );
    assert!(!t("forged").exists());
    // The instance's log missing from b altogether (only its summary says PASS): refused.
    std::fs::remove_file(&log).unwrap();
    xtask::evidence::write_index(&lb.out).unwrap();
    let (ok, err) = merge([&t("a"), &t("b")], "nolog");
    assert!(!ok && err.contains(&format!("records PASS for {label}; refused")), "{err}");
}
