//! kem-07's shipped manifest on a tree laid out as real archives are
//! (tests/common/real_tree.rs): every include pattern builds and passes, the build sees
//! what the compiler read and no KAT text, and the profile reaches the seed page's
//! verdict on a Keccak layer shaped like XKCP's opt64.

mod common;

use common::real_tree::{Tree, ID, INSTANCES};
use common::{entry, xtask};
use xtask::evidence::schema::{self, BuildRecord, ProfileRecord, Survey, Verdict};
use xtask::kat::verify::Status;

fn build_record(cache: &std::path::Path, key: &str) -> BuildRecord {
    let path = cache.join("builds").join(ID).join(&key[..20]).join("build.json");
    schema::read(camino::Utf8Path::from_path(&path).unwrap()).unwrap().expect("a build record")
}

#[test]
fn a_real_trees_includes_build_and_pass_and_its_dead_keccak_is_seen_dead() {
    let t = Tree::new();
    let (m, zip, out, cache) = (t.manifest.to_str().unwrap(), t.zip.to_str().unwrap(), t.path("out"), t.path("cache"));
    let run =
        xtask(&["verify", m, "--engine", "podman", "--archive", zip, "--out", out.to_str().unwrap()], Some(&cache));
    assert_eq!(run.status.code(), Some(0));
    let s = common::summary(&out, ID);
    for (label, _) in INSTANCES {
        let e = entry(&s, label);
        assert_eq!(e.status, Status::Pass, "{label}: {:?}", e.message);
        let record = build_record(&cache, &e.build_key);
        let seen: Vec<&str> = record.inputs.keys().map(String::as_str).collect();
        for listed in [
            "lib/XKCP/opt64/KeccakP-1600-64.macros",
            "lib/XKCP/opt64/KeccakP-1600-unrolling.macros",
            "lib/XKCP/KeccakSponge.inc",
            "lib/XKCP/PlSnP-Fallback.inc",
            "src/tables/gf2m_log.tab",
            "src/qpoly_mul.c",
            "lib/common/le_bytes.h",
        ] {
            assert!(seen.contains(&format!("{label}/{listed}").as_str()), "{label}: {listed} not in {seen:?}");
        }
        assert!(seen.contains(&"BRQC-128/lib/shared/brqc_shared.h"), "{seen:?}");
        // Nothing the compiler did not read: no KAT text, no Makefile, no AVX2 folder.
        for never in ["KAT_KEM_", "Makefile", "avx2", "main_brqc.c", "KAT_KEM.c"] {
            assert!(!seen.iter().any(|f| f.contains(never)), "{label}: {never} reached the build: {seen:?}");
        }
        // The digest recorded is the one of the file the build saw.
        let macros = format!("{label}/lib/XKCP/opt64/KeccakP-1600-64.macros");
        let shipped = std::fs::read(common::real_tree::template("lib/XKCP/opt64/KeccakP-1600-64.macros")).unwrap();
        assert_eq!(record.inputs[&macros], common::sha256(&shipped));
    }

    // The profile, with kem-07's own groups: XKCP is compiled in, never called, and its
    // round constants are read only by the functions those groups wrap.
    let o = out.to_str().unwrap();
    let args = ["profile", m, "--engine", "podman", "--archive", zip, "--instance", "BRQC-128", "--out", o];
    let prof = xtask(&[&args[..], &["--quick", "--allow-unfixed-host"]].concat(), Some(&cache));
    assert!(prof.status.success());
    let layout = common::layout(&out);
    let keygen: ProfileRecord = schema::read(&layout.profile(ID, "BRQC-128", "keygen")).unwrap().unwrap();
    let calls = |symbol: &str| {
        keygen.groups.iter().flat_map(|g| &g.symbols).find(|s| s.symbol == symbol).map(|s| s.calls_per_op)
    };
    assert_eq!(calls("get_random_number"), Some(1.0));
    assert_eq!(calls("pseudohash"), Some(1.0));
    for keccak in ["KeccakP1600_Permute_24rounds", "KeccakF1600_FastLoop_Absorb", "SHA3_256"] {
        assert_eq!(calls(keccak), Some(0.0), "{keccak}");
    }
    let survey: Survey = schema::read(&layout.survey(ID)).unwrap().unwrap();
    let brqc = survey.instances.iter().find(|i| i.label == "BRQC-128").unwrap();
    assert!(brqc.compiled_in.get("Keccak").unwrap().iter().any(|e| e.contains("round constants")), "{brqc:?}");
    assert_eq!(brqc.verdict, Verdict::IccsOnly, "{brqc:?}");
    assert!(brqc.notes.contains(&"Keccak dead".to_owned()), "{:?}", brqc.notes);
    // True of what the groups wrap, and no more: the verdict says what it cannot see.
    assert_eq!(brqc.caveat.as_deref(), Some(xtask::measure::profile::UNSEEN));
}
