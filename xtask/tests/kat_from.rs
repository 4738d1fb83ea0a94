//! `kat_from`: an instance with no KAT of its own (a timed variant) is built and its KAT
//! text checked against the line of the instance it names. On the fixture KEM: `kf-fast`
//! is the same code as `kf-ref` and passes against kf-ref's digest; `kf-wrong` computes
//! other values and is a MISMATCH against it. Expected digests come from the Rust model.
//! kf-fast is also an optimized variant (`variant = "optimized"`, its own `-O3`): timed
//! beside kf-ref, its figures stand in a table of their own on the page.

use std::path::Path;

mod common;

use common::fixture::{manifest, model_digest, write_tree, zip_tree, Inst};
use common::{entry, xtask};
use xtask::kat::verify::Status;

fn instances() -> Vec<Inst> {
    [("kf-ref", 16), ("kf-fast", 16), ("kf-wrong", 24)].into_iter().map(|(l, n)| (l, n, String::new())).collect()
}

/// `<dir>/fixture-kem.toml` with `kat_from` set as given, and a kat.sha256 with kf-ref's
/// line only.
fn manifest_dir(dir: &Path, zip: &Path, kat_from: &[(&str, &str)]) -> String {
    let mut m = manifest(zip, &instances());
    for (label, from) in kat_from {
        let at = format!("label = \"{label}\"\n");
        let variant = if *label == "kf-fast" { "variant = \"optimized\"\nextra_flags = [\"-O3\"]\n" } else { "" };
        m = m.replace(&at, &format!("{at}kat_from = \"{from}\"\n{variant}"));
    }
    std::fs::create_dir_all(dir.join("fixture-kem")).unwrap();
    std::fs::write(dir.join("fixture-kem.toml"), m).unwrap();
    let line = format!("{} strict kf-ref/KAT_KEM_kf-ref.txt\n", model_digest(16, false, 10));
    std::fs::write(dir.join("fixture-kem/kat.sha256"), line).unwrap();
    dir.join("fixture-kem.toml").to_str().unwrap().to_owned()
}

#[test]
fn a_variant_passes_against_the_named_instances_digest_and_a_wrong_one_does_not() {
    let tmp = tempfile::tempdir().unwrap();
    let tree = tmp.path().join("tree");
    write_tree(&tree, &instances());
    let zip = tmp.path().join("Fixture KEM v1.zip");
    zip_tree(&tree, &zip);
    let (out, z) = (tmp.path().join("out"), zip.to_str().unwrap());

    // A chain is refused from the manifest alone (exit 2), before any engine or archive.
    let m = manifest_dir(&tmp.path().join("chain"), &zip, &[("kf-fast", "kf-ref"), ("kf-wrong", "kf-fast")]);
    let run = xtask(&["verify", &m, "--engine", "podman", "--archive", z, "--out", out.to_str().unwrap()], None);
    let err = String::from_utf8_lossy(&run.stderr);
    assert_eq!(run.status.code(), Some(2), "{err}");
    assert!(err.contains("instance kf-wrong: kat_from = \"kf-fast\" names an instance that takes its KAT"), "{err}");

    let m = manifest_dir(&tmp.path().join("m"), &zip, &[("kf-fast", "kf-ref"), ("kf-wrong", "kf-ref")]);
    let args = ["verify", &m, "--engine", "podman", "--archive", z, "--out", out.to_str().unwrap()];
    // kf-ref itself is not built: the variants need only its line.
    let run = xtask(&[&args[..], &["--instance", "kf-fast", "--instance", "kf-wrong"]].concat(), None);
    assert_eq!(run.status.code(), Some(1), "the wrong variant is a finding");
    let s = common::summary(&out, "fixture-kem");
    assert!(s.instances.iter().all(|i| i.label != "kf-ref"), "kf-ref was not asked for");
    let (fast, wrong) = (entry(&s, "kf-fast"), entry(&s, "kf-wrong"));
    let published = model_digest(16, false, 10);
    assert_eq!(fast.status, Status::Pass, "{:?}", fast.message);
    assert_eq!(wrong.status, Status::Mismatch, "{:?}", wrong.message);
    for r in [fast, wrong] {
        assert_eq!(r.expected_sha256.as_ref().map(|d| d.as_str()), Some(published.as_str()), "{}", r.label);
        assert_eq!(r.kat_file.as_deref(), Some("KAT_KEM_kf-ref.txt"), "{}", r.label);
    }
    assert_eq!(fast.actual_sha256.as_ref().map(|d| d.as_str()), Some(published.as_str()));
    let other = model_digest(24, false, 10);
    assert_eq!(wrong.actual_sha256.as_ref().map(|d| d.as_str()), Some(other.as_str()));
    // The first difference is shown against kf-ref's submitted text, the text it must equal.
    let said = wrong.message.as_deref().unwrap_or_default();
    assert!(said.contains("reference `kf-ref/KAT/KAT_KEM_kf-ref.txt` of the source tree"), "{said}");
    // --resume keeps the variant's PASS: derived again from its log against kf-ref's line.
    let run = xtask(&[&args[..], &["--instance", "kf-fast", "--resume"]].concat(), None);
    assert_eq!(run.status.code(), Some(0));
    let said = common::stdout(&run);
    assert!(said.contains("kf-fast") && said.contains("(kept, --resume)"), "{said}");
    assert!(fast.flags.iter().any(|f| f == "-O3"), "the variant's own flags: {:?}", fast.flags);
    variant_figures_stand_apart(&args[1..], &out);
}

/// kf-ref and its optimized variant timed in one run: the page's reference table has
/// kf-ref only; kf-fast's figures are in the table of optimized implementations.
fn variant_figures_stand_apart(verify_args: &[&str], out: &Path) {
    let rest = [&verify_args[..verify_args.len() - 2], &["--instance", "kf-ref", "--instance", "kf-fast"]].concat();
    let bench =
        [&["bench"], &rest[..], &["--out", out.to_str().unwrap(), "--quick", "--allow-unfixed-host", "--op", "keygen"]];
    let run = xtask(&bench.concat(), None);
    assert_eq!(run.status.code(), Some(0), "{}", String::from_utf8_lossy(&run.stderr));
    let page = xtask(&["report", verify_args[0], "--out", out.to_str().unwrap()], None);
    assert!(page.status.success(), "{}", String::from_utf8_lossy(&page.stderr));
    let text = std::fs::read_to_string(common::layout(out).report("fixture-kem")).unwrap();
    let perf = &text[text.find("## 4. Performance").expect("section 4")..];
    let (reference, optimized) = perf.split_once("### Optimized implementations").expect("the variants' table");
    let row = |t: &str, label: &str| t.lines().any(|l| l.starts_with(&format!("| {label} | keygen")));
    assert!(row(reference, "kf-ref") && !row(reference, "kf-fast"), "{perf}");
    let optimized = &optimized[..optimized.find("\n## ").unwrap_or(optimized.len())];
    assert!(row(optimized, "kf-fast") && !row(optimized, "kf-ref"), "{perf}");
}

/// `list` says which instance's KAT a variant takes (sign-02's optimized instances).
#[test]
fn list_shows_whose_kat_a_variant_takes() {
    let run = xtask(&["list"], None);
    assert!(run.status.success());
    let text = common::stdout(&run);
    let line = text.lines().find(|l| l.contains("instances: BiT-128")).unwrap_or_default();
    for label in ["128", "256", "512"] {
        assert!(line.contains(&format!("BiT-{label}-avx2 (optimized, KAT of BiT-{label})")), "{line}");
    }
}
