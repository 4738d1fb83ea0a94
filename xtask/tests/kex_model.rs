//! The key-exchange fixture's Rust model (tests/common/kex_fixture.rs) on its own: no
//! container, no C code. The shape of the KAT_KEX records, template mode, the carried
//! lengths of an unset last pass, agreeing secrets, the instance list, and the archive
//! and manifest as text (the manifest type does not know `family = "kex"` yet).

use std::collections::BTreeSet;

use serde::Deserialize;

mod common;

use common::fixture::{self, expand, Drng};
use common::kex_fixture::*;
use xtask::kat;

/// The field names of a `passes`-pass record, in the driver's order.
fn field_names(passes: usize) -> Vec<String> {
    let mut v: Vec<String> = ["Count", "Seed_Len", "Seed", "Pass_Num"].map(String::from).into();
    let mut field = |n: String| v.extend([format!("{n}_Len"), n]);
    for s in ["a", "b"] {
        field(format!("PK{s}"));
        field(format!("SK{s}"));
        field(format!("Init_St{s}"));
    }
    for k in 1..=passes {
        field(format!("Pass{k}_St{}", if k % 2 == 1 { "a" } else { "b" }));
        field(format!("M{k}"));
    }
    field("SS".into());
    v
}

/// The value of field `name` in a record's lines.
fn value<'a>(rec: &'a [String], name: &str) -> &'a str {
    let line = rec.iter().find(|l| l.split(" =").next() == Some(name)).unwrap_or_else(|| panic!("no {name}"));
    line.split_once(" = ").map_or("", |(_, v)| v)
}

#[test]
fn records_have_the_official_shape() {
    let kem = fixture::model_lines(16);
    for passes in 0..=4 {
        let recs = lines(&records(&Proto::plain(passes)), false);
        assert_eq!(recs.len(), 10);
        for (i, rec) in recs.iter().enumerate() {
            let names: Vec<&str> = rec.iter().map(|l| l.split(" =").next().unwrap()).collect();
            assert_eq!(names, field_names(passes), "{passes} passes, record {i}");
            assert_eq!(rec[..2], [format!("Count = {i}"), "Seed_Len = 64".into()]);
            // Every public-key driver draws the same per-record seeds (facts §1).
            assert_eq!(rec[2], kem[i][2], "record {i}: the seed of the KEM fixture's record {i}");
            assert_eq!(rec[3], format!("Pass_Num = {passes}"));
            let keys = [("PKa", 32), ("SKa", 32), ("Init_Sta", 65), ("PKb", 32), ("SKb", 32), ("Init_Stb", 65)];
            let mut want: Vec<(String, usize)> = keys.map(|(n, l)| (n.to_owned(), l)).into();
            for k in 1..=passes {
                let st = if k % 2 == 1 { "a" } else { "b" };
                want.extend([(format!("Pass{k}_St{st}"), 65), (format!("M{k}"), 24 + 8 * k)]);
            }
            want.push(("SS".into(), 32));
            for (name, n) in want {
                assert_eq!(value(rec, &format!("{name}_Len")), n.to_string(), "{name}");
                let v = value(rec, &name);
                assert_eq!(v.len(), 2 * n, "{name}");
                assert!(v.bytes().all(|b| b.is_ascii_digit() || (b'A'..=b'F').contains(&b)), "{name} = {v}");
            }
        }
    }
    assert_eq!((0..=4).map(total_msg_len).collect::<Vec<_>>(), [0, 32, 72, 120, 176]);
    let text = kat_text(&Proto::plain(2), false);
    assert_eq!(text.matches("\n\n").count(), 10);
    assert!(text.starts_with("Count = 0\nSeed_Len = 64\nSeed = "), "{}", &text[..40]);
    assert!(text.ends_with("\n\n") && !text.contains('\r'));
}

#[test]
fn the_drng_draws_ska_e_a_skb_e_b_in_that_order() {
    let recs = records(&Proto::plain(1));
    for r in &recs {
        let draws = Drng::new(&r.seed).get(128);
        assert_eq!(r.a.sk, draws[..32]);
        assert_eq!(r.a.st[..32], draws[32..64]);
        assert_eq!(r.b.sk, draws[64..96]);
        assert_eq!(r.b.st[..32], draws[96..]);
        let t0 = expand(0x4841, b"T", 32);
        for p in [&r.a, &r.b] {
            assert_eq!(p.pk, expand(0x4841, &[b"P".as_slice(), &p.sk].concat(), 32));
            assert_eq!((&p.st[32..64], p.st[64]), (t0.as_slice(), 0), "T = H(\"T\"), seen = 0");
        }
    }
    assert_ne!(recs[0].a.sk, recs[1].a.sk);
}

#[test]
fn template_mode_blanks_every_length_and_the_pass_count() {
    for passes in [0, 2, 4] {
        let recs = records(&Proto::plain(passes));
        let (full, blank) = (lines(&recs, false), lines(&recs, true));
        for (f, b) in full.iter().flatten().zip(blank.iter().flatten()) {
            let name = f.split(" =").next().unwrap();
            if name == "Pass_Num" || (name.ends_with("_Len") && name != "Seed_Len") {
                assert_eq!(b.trim_end(), format!("{name} ="), "{passes} passes");
                assert_ne!(f.trim_end(), b.trim_end());
            } else {
                assert_eq!(f, b, "{passes} passes: only lengths and Pass_Num change");
            }
        }
        assert_eq!(full.iter().flatten().count(), blank.iter().flatten().count());
        let p = Proto::plain(passes);
        assert_ne!(strict_digest(&p, true), strict_digest(&p, false));
    }
}

#[test]
fn both_sides_derive_the_same_secret() {
    let mut protos: Vec<Proto> = (0..=4).map(Proto::plain).collect();
    protos.push(Proto { unset: true, ..Proto::plain(4) });
    protos.push(Proto { tweak: true, ..Proto::plain(2) });
    protos.push(Proto { ignore_tail: true, ..Proto::plain(2) });
    let mut seen = BTreeSet::new();
    for p in &protos {
        for (k, r) in records(p).iter().enumerate() {
            assert_eq!(r.ssa, r.ssb, "{p:?} record {k}");
            assert_eq!(r.ssa.len(), SS);
            if !p.unset {
                seen.insert(r.ssa.clone());
            }
            // The sender's state after pass k has absorbed messages 1..k.
            for (j, (st, _)) in r.passes.iter().enumerate() {
                let absorbed = if p.unset && j + 1 == p.passes { j } else { j + 1 };
                assert_eq!(usize::from(st[64]), absorbed, "{p:?} pass {}", j + 1);
            }
        }
    }
    assert_eq!(seen.len(), 10 * (protos.len() - 1), "a secret repeats across records or protocols");
    // The passes do not bind P: an unset 4th pass leaves the 3-pass exchange's secret.
    let unset = records(&protos[5]);
    assert!(unset.iter().zip(records(&Proto::plain(3))).all(|(u, p)| u.ssa == p.ssa));
    // The agreement needs the last message: derived without it, the sides differ.
    for passes in 1..=4 {
        let p = Proto::plain(passes);
        let r = &records(&p)[0];
        // The side behind holds B's initial state (1 pass) or its state after pass P - 1.
        let last = &r.passes[passes - 1].1;
        let st = if passes == 1 { &r.b.st } else { &r.passes[passes - 2].0 };
        assert_eq!(p.derive(st, last, &r.a.pk, &r.b.pk), r.ssa, "{passes} passes");
        assert_ne!(p.derive(st, &[], &r.a.pk, &r.b.pk), r.ssa, "{passes} passes, the message left out");
    }
}

#[test]
fn the_tweak_changes_only_the_secret() {
    let (plain, tweak) = (records(&Proto::plain(2)), records(&Proto { tweak: true, ..Proto::plain(2) }));
    for (a, b) in plain.iter().zip(&tweak) {
        assert_eq!((&a.a, &a.b, &a.passes), (&b.a, &b.b, &b.passes));
        assert_eq!(a.ssa[0] ^ 1, b.ssa[0]);
        assert_eq!(a.ssa[1..], b.ssa[1..]);
    }
}

#[test]
fn an_unset_last_pass_prints_what_kex_02_prints() {
    let unset = Proto { unset: true, ..Proto::plain(4) };
    let (recs, plain) = (records(&unset), records(&Proto::plain(4)));
    for (k, (rec, (r, p))) in lines(&recs, false).iter().zip(recs.iter().zip(&plain)).enumerate() {
        // The message length stays at its preset 0; B's state length repeats what B set.
        assert_eq!(value(rec, "M4_Len"), "0", "record {k}");
        assert_eq!(value(rec, "M4"), "", "record {k}");
        assert_eq!(value(rec, "Pass4_Stb_Len"), "65", "record {k}");
        assert_eq!(r.passes[..3], p.passes[..3], "record {k}: passes 1..3 are the honest ones");
        assert_ne!(r.passes[3].0, p.passes[3].0, "record {k}: B's state has not absorbed a 4th message");
        assert_ne!(r.ssa, p.ssa);
    }
    assert!(kat_text(&unset, false).contains("\nM4_Len = 0\nM4 = \n"));
    assert_ne!(strict_digest(&unset, false), strict_digest(&Proto::plain(4), false));
}

/// Label, P, KAT status and contract of every instance (the brief's table).
const TABLE: &[(&str, usize, &str, Contract)] = &[
    ("kex-p0", 0, "PASS", Contract::Holds),
    ("kex-p1", 1, "PASS", Contract::Holds),
    ("kex-p2", 2, "PASS", Contract::Holds),
    ("kex-p3", 3, "PASS", Contract::Holds),
    ("kex-p4", 4, "PASS", Contract::Holds),
    ("kex-template", 2, "PASS", Contract::Holds),
    ("kex-tweak", 2, "MISMATCH", Contract::Holds),
    ("kex-ignore", 2, "PASS", Contract::Holds),
    ("kex-disagree", 2, "CRYPTOFAIL", Contract::Unchecked),
    ("kex-msgover", 2, "OVERFLOW", Contract::Unchecked),
    ("kex-unset", 4, "PASS", Contract::Breach),
    ("kex-early", 2, "CRYPTOFAIL", Contract::Unchecked),
    ("kex-never", 3, "CRYPTOFAIL", Contract::Unchecked),
    ("kex-hugepass", 2, "CRYPTOFAIL", Contract::Unchecked),
    ("kex-drift", 2, "CRYPTOFAIL", Contract::Unchecked),
    ("kex-deriveover", 2, "OVERFLOW", Contract::Unchecked),
    ("kex-zerototal", 2, "OVERFLOW", Contract::Unchecked),
];

#[test]
fn instances_are_consistent() {
    let insts = instances();
    let got: Vec<_> = insts.iter().map(|i| (i.label, i.proto.passes, i.kat, i.contract)).collect();
    assert_eq!(got, TABLE);
    let body = std::fs::read_to_string(std::path::Path::new(fixture::FIXTURE).join("kex_body.c")).unwrap();
    for a in &insts {
        for b in &insts {
            assert!(a.label == b.label || !a.label.contains(b.label), "{} contains {}", a.label, b.label);
        }
        assert_eq!(a.passes, a.proto.passes, "{}: the manifest declares the honest count", a.label);
        assert_eq!(a.template, a.label == "kex-template");
        assert_eq!(a.proto.tweak, a.defines.contains("FIX_TWEAK"), "{}", a.label);
        assert_eq!(a.proto.unset, a.defines.contains("FIX_UNSET"), "{}", a.label);
        assert_eq!(a.proto.ignore_tail, a.defines.contains("FIX_IGNORE_TAIL"), "{}", a.label);
        let h = header(a);
        assert!(h.contains(&format!("#define ALGORITHM_INSTANCE \"{}\"\n", a.label)));
        assert!(h.contains(&format!("#define OUTPUT_BLANK_TEST_VECTORS {}\n", u8::from(a.template))));
        assert!(h.contains(&format!("#define FIX_PASSES {}\n", a.proto.passes)) && h.contains("#define FIX_N 32\n"));
        assert!(h.contains(a.defines) && h.ends_with("#endif\n"));
        // Every switch an instance sets is one the body reads.
        for name in a.defines.lines().filter_map(|l| l.strip_prefix("#define ")?.split(' ').next()) {
            assert!(body.contains(&format!("defined({name})")) || body.contains(&format!("def {name}")), "{name}");
        }
        // Only the faults that change what the model prints reach the published text.
        assert_eq!(a.published(), Proto { tweak: false, ..a.proto });
    }
    let h = header(&insts[0]);
    for f in ["passes_num", "pk_len_bytes", "sk_len_bytes", "sta_len_bytes", "stb_len_bytes", "ss_len_bytes"] {
        assert!(h.contains(&format!("unsigned long long kex_get_{f}(void);")), "{f}");
    }
    assert!(h.contains("unsigned long long kex_get_total_msg_len_bytes(void);"));
    for f in ["init_a", "init_b", "generate_pass1_msg_a", "generate_pass2_msg_b", "generate_pass3_msg_a"] {
        assert!(h.contains(&format!("int kex_{f}(unsigned char *")), "{f}");
    }
    assert!(h.contains("int kex_derive_ss_a(unsigned char *ska, unsigned long long ska_len, unsigned char *pkb"));
    assert!(h.contains("int kex_derive_ss_b(unsigned char *skb, unsigned long long skb_len, unsigned char *pka"));
    assert!(!h.contains("pass4"));
    let some = subset(&["kex-unset", "kex-p0"]);
    assert_eq!(some.iter().map(|i| i.label).collect::<Vec<_>>(), ["kex-unset", "kex-p0"]);
}

#[test]
#[should_panic(expected = "no KEX instance kex-p5")]
fn subset_refuses_an_unknown_label() {
    subset(&["kex-p1", "kex-p5"]);
}

#[test]
fn the_shipped_texts_hash_to_the_published_digests() {
    let tmp = tempfile::tempdir().unwrap();
    let insts = instances();
    let root = write_tree(tmp.path(), &insts);
    let entries = kat::parse(&kat_manifest(&insts)).unwrap();
    assert_eq!(entries.len(), insts.len());
    for (e, i) in entries.iter().zip(&insts) {
        assert_eq!((e.label.as_str(), e.mode, e.records), (i.label, kat::Mode::Strict, None));
        assert_eq!(e.file, format!("KAT_KEX_{}.txt", i.label));
        let shipped = std::fs::read(root.join(i.label).join("KAT").join(&e.file)).unwrap();
        assert!(shipped.windows(2).filter(|w| w == b"\r\n").count() > 100, "{}: CRLF", i.label);
        // The tool's rule on the shipped text gives the model's own strict digest.
        assert_eq!(kat::digest(&shipped, e).unwrap(), e.sha256.as_str(), "{}", i.label);
        // What the C really prints passes where the table says PASS, and the tweak does not.
        let real = kat::digest(kat_text(&i.proto, i.template).as_bytes(), e).unwrap();
        assert_eq!(real == e.sha256.as_str(), i.label != "kex-tweak", "{}", i.label);
    }
    let digests: BTreeSet<_> = entries.iter().map(|e| e.sha256.as_str().to_owned()).collect();
    // The faulty 2-pass instances publish kex-p2's text (kex-never kex-p3's); the rest differ.
    let p2 = strict_digest(&Proto::plain(2), false);
    assert_eq!(entries.iter().filter(|e| e.sha256.as_str() == p2).count(), 9);
    assert_eq!(digests.len(), insts.len() - 9, "p0..p4, template, unset: 7 distinct texts");
}

#[derive(Deserialize)]
struct Manifest {
    id: String,
    family: String,
    source: Source,
    build: Build,
    kat: Kat,
    bench: Bench,
    instance: Vec<Instance>,
    profile: Profile,
}

#[derive(Deserialize)]
struct Profile {
    groups: Vec<Group>,
}

#[derive(Deserialize)]
struct Group {
    name: String,
    kind: String,
}

#[derive(Deserialize)]
struct Source {
    kind: String,
    file: String,
    bytes: u64,
    sha256: String,
    root: String,
}

#[derive(Deserialize)]
struct Build {
    sources: Vec<String>,
    include: Vec<String>,
    never_compile: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Kat {
    program: Vec<String>,
    api_header: String,
    file: String,
    reference: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Bench {
    api: String,
    header: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Instance {
    label: String,
    dir: String,
    passes: u64,
}

#[test]
fn the_archive_and_manifest_are_what_the_tool_reads() {
    let tmp = tempfile::tempdir().unwrap();
    let insts = instances();
    let (root, zip) = write_archive(tmp.path(), &insts);
    let path = manifest_dir(&tmp.path().join("m"), &zip, &insts);
    assert_eq!(path, tmp.path().join("m/fixture-kex.toml"));
    let m: Manifest = toml::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!((m.id.as_str(), m.family.as_str()), (ID, "kex"));
    let s = &m.source;
    assert_eq!((s.kind.as_str(), s.file.as_str(), s.root.as_str()), ("archive", "Fixture KEX v1.zip", fixture::ROOT));
    let bytes = std::fs::read(&zip).unwrap();
    assert_eq!((s.bytes, s.sha256.as_str()), (bytes.len() as u64, common::sha256(&bytes).as_str()));
    assert_eq!((m.build.sources, m.build.include), (vec!["{dir}/*.c".to_owned()], vec!["{dir}".to_owned()]));
    assert_eq!(m.build.never_compile, ["{dir}/KAT_KEX.c"]);
    assert_eq!(m.kat.program, ["driver:iccs_kex_kat.c"]);
    assert_eq!((m.kat.api_header.as_str(), m.kat.file.as_str()), ("{dir}/KEX_{label}.h", "KAT_KEX_{label}.txt"));
    assert_eq!(m.kat.reference, "{dir}/KAT/KAT_KEX_{label}.txt");
    assert_eq!((m.bench.api.as_str(), m.bench.header.as_str()), ("iccs", "{dir}/KEX_{label}.h"));
    let groups: Vec<_> = m.profile.groups.iter().map(|g| (g.name.as_str(), g.kind.as_str())).collect();
    assert_eq!(groups, [("hash", "iccs-hash"), ("drng", "iccs-drng")]);
    let declared: Vec<_> = m.instance.iter().map(|i| (i.label.as_str(), i.dir.as_str(), i.passes)).collect();
    let want: Vec<_> = insts.iter().map(|i| (i.label, i.label, i.passes as u64)).collect();
    assert_eq!(declared, want);
    assert!(m
        .instance
        .iter()
        .filter(|i| ["kex-hugepass", "kex-drift"].contains(&i.label.as_str()))
        .all(|i| i.passes == 2));
    // Each instance folder: the fixture's DRNG and hash, its header and source, the
    // shipped generator that must never build, the published text.
    let kat_sha = std::fs::read_to_string(tmp.path().join("m/fixture-kex/kat.sha256")).unwrap();
    assert_eq!(kat_sha, kat_manifest(&insts));
    for i in &insts {
        let d = root.join(i.label);
        for f in ["drng.h", "drng.c", "auxfunc.h", "auxfunc.c", "mix.h"] {
            assert!(d.join(f).is_file(), "{}/{f}", i.label);
        }
        assert_eq!(std::fs::read_to_string(d.join(format!("KEX_{}.h", i.label))).unwrap(), header(i));
        let c = std::fs::read_to_string(d.join(format!("KEX_{}.c", i.label))).unwrap();
        assert!(c.starts_with(&format!("#include \"KEX_{}.h\"\n/* Fixture key exchange", i.label)));
        assert!(std::fs::read_to_string(d.join("KAT_KEX.c")).unwrap().starts_with("#error"));
    }
    // The archive holds the tree under its wrapping folder.
    let names: Vec<String> = zip::ZipArchive::new(std::fs::File::open(&zip).unwrap())
        .unwrap()
        .file_names()
        .map(|n| n.unwrap().into_owned())
        .collect();
    let want = format!("{WRAP}/{}/kex-unset/KAT/KAT_KEX_kex-unset.txt", fixture::ROOT);
    assert!(names.contains(&want), "{want} not in {names:?}");
}
