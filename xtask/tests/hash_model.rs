//! The hash fixture's Rust model (tests/common/hash_fixture.rs) on its own: no container,
//! no C code. The SHA-256 padding model against `sha2::Sha256` and against a second,
//! bit-by-bit route; the DRNG's bit masking; the shape of the KAT texts; the archive and
//! manifest. `cargo test --test hash_model -- --ignored --nocapture` times the four
//! digests of the kat.sha256 lines.

use std::time::Instant;

use sha2::digest::generic_array::GenericArray;
use sha2::{Digest, Sha256};

mod common;

use common::fixture::{hex, squeeze, Drng};
use common::hash_fixture::{
    header, kat_digest, kat_manifest, kat_records, kat_text, loop_digest, manifest, mask_tail, seed, sha256_bits,
    sha256_padded, strict_digest, write_archive, BitDrng, ByteStream, INSTANCES, PARTS,
};

/// Bytes to hash: the fixture DRNG's stream, so every length gets different content.
fn bytes(n: usize, tag: &str) -> Vec<u8> {
    Drng::new(tag.as_bytes()).get(n)
}

/// SHA-256 of a bit string by a second route: the message as single bits, the padding
/// appended bit by bit, packed into blocks for the compression function.
fn sha256_by_bits(msg: &[u8], bits: u64) -> [u8; 32] {
    let mut v: Vec<bool> = (0..bits).map(|i| msg[(i / 8) as usize] >> (7 - i % 8) & 1 == 1).collect();
    v.push(true);
    while v.len() % 512 != 448 {
        v.push(false);
    }
    v.extend((0..64).rev().map(|i| bits >> i & 1 == 1));
    let packed: Vec<u8> = v.chunks(8).map(|c| c.iter().fold(0u8, |a, &b| a << 1 | u8::from(b))).collect();
    let blocks: Vec<_> = packed.chunks(64).map(GenericArray::clone_from_slice).collect();
    let mut state = [0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19];
    sha2::compress256(&mut state, &blocks);
    let mut out = [0u8; 32];
    for (i, w) in state.iter().enumerate() {
        out[4 * i..4 * i + 4].copy_from_slice(&w.to_be_bytes());
    }
    out
}

#[test]
fn the_padding_model_equals_sha2_on_byte_lengths() {
    let long = bytes(70_000, "long");
    for n in (0..300).chain([447, 448, 1000, 4096, 65_536, 65_599, 70_000]) {
        let m = &long[..n];
        let want: [u8; 32] = Sha256::digest(m).into();
        assert_eq!(sha256_padded(m, 8 * n as u64), want, "{n} bytes");
        assert_eq!(sha256_bits(m, 8 * n as u64), want, "{n} bytes");
    }
    // Known answers of FIPS 180-4's examples (byte messages).
    assert_eq!(hex(&sha256_padded(b"", 0)), "E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855");
    assert_eq!(hex(&sha256_padded(b"abc", 24)), "BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD");
}

#[test]
fn bit_lengths_agree_with_the_bit_by_bit_route() {
    let m = bytes(200, "bits");
    // Every length up to 1600 bits: all tail widths, both sides of each block boundary.
    for bits in 0..=1600u64 {
        let mut msg = m[..bits.div_ceil(8) as usize].to_vec();
        mask_tail(&mut msg, bits);
        let want = sha256_by_bits(&msg, bits);
        assert_eq!(sha256_bits(&msg, bits), want, "{bits} bits");
        // The bits below the message in the last byte do not count.
        assert_eq!(sha256_bits(&m[..msg.len()], bits), want, "{bits} bits, unmasked");
    }
    // A single 1 bit and a single 0 bit are different messages, and neither is empty.
    let one = sha256_bits(&[0x80], 1);
    let zero = sha256_bits(&[0x00], 1);
    assert_ne!(one, zero);
    assert_ne!(zero, sha256_bits(&[], 0));
    // 7 bits of 0x00 and the byte 0x01 pad to different blocks (the 1 bit and the length).
    assert_ne!(sha256_bits(&[0x00], 7), sha256_bits(&[0x01], 8));
}

#[test]
fn the_drng_masks_the_last_byte_and_draws_nothing_for_zero_bits() {
    let s = b"some seed".as_slice();
    let mut d = BitDrng::new(s);
    assert!(d.get_bits(0).is_empty());
    let a = d.get_bits(13);
    let b = d.get_bits(0);
    let c = d.get_bits(8);
    let e = d.get_bits(1);
    let f = d.get_bits(63);
    // The same stream as the KEM fixture's DRNG, ceil(bits/8) bytes a call.
    let stream = Drng::new(s).get(2 + 1 + 1 + 8);
    assert_eq!(a, [stream[0], stream[1] & 0xF8]);
    assert!(b.is_empty());
    assert_eq!(c, [stream[2]]);
    assert_eq!(e, [stream[3] & 0x80]);
    assert_eq!(f[..7], stream[4..11]);
    assert_eq!(f[7], stream[11] & 0xFE);
    // Every width keeps exactly its high bits.
    for bits in 1..=16u64 {
        let mut v = vec![0xFFu8; bits.div_ceil(8) as usize];
        mask_tail(&mut v, bits);
        assert_eq!(v.iter().map(|b| u64::from(b.count_ones())).sum::<u64>(), bits, "{bits}");
        assert_eq!(v.last().unwrap().trailing_zeros() as u64, (8 - bits % 8) % 8, "{bits}");
    }
    // The whole-byte path continues the same stream.
    let mut g = BitDrng::new(s);
    g.get_bits(12);
    assert_eq!(g.get_bytes(3), Drng::new(s).get(5)[2..]);
    // The fast fill of the long draws is the same stream, cut anywhere.
    let mut f = BitDrng::new(s);
    let mut buf = vec![0u8; 5000];
    let (x, y) = buf.split_at_mut(1234);
    f.fill_bytes(x);
    f.fill_bytes(&mut y[..0]);
    f.fill_bytes(y);
    assert_eq!(buf, Drng::new(s).get(5000));
    assert_eq!(f.get_bits(8), Drng::new(s).get(5001)[5000..]);
    // And it is the fixture's absorb/squeeze arithmetic.
    let mut st = common::fixture::absorb(0xcbf29ce484222325, s);
    assert_eq!(squeeze(&mut st, 12), stream);
}

#[test]
fn the_byte_stream_hashes_pieces_as_one_message_and_keeps_the_ends() {
    let m = bytes(5000, "stream");
    let mut s = ByteStream::new();
    let mut at = 0;
    for (i, n) in [0usize, 1, 3, 7, 64, 100, 0, 2, 1000, 3823].into_iter().enumerate() {
        s.update(&m[at..at + n]);
        at += n;
        assert_eq!(s.len(), at as u64, "{i}");
    }
    assert_eq!(at, m.len());
    let (h, head, last) = s.finish();
    assert_eq!(h, Sha256::digest(&m).to_vec());
    assert_eq!(head, m[..8]);
    assert_eq!(last, m[m.len() - 8..]);
}

#[test]
fn the_2_12_text_has_4097_records_of_the_drivers_shape() {
    let text = kat_text("2_12", 256);
    let records: Vec<&str> = text.split_terminator("\n\n").collect();
    assert_eq!(records.len(), 4097);
    assert!(text.ends_with("\n\n") && !text.contains("\r"));
    // The empty message: `Msg = ` (the canonical rule drops the blank), SHA-256("").
    assert_eq!(
        records[0],
        "Msg_Len = 0\nMsg = \nDst_Len = 256\nDst = E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"
    );
    // The stream of the file's seed, ceil(bits/8) bytes a record, the last byte masked.
    let mut stream = Drng::new(&seed("2_12"));
    for (bits, rec) in records.iter().enumerate().take(300) {
        let bits = bits as u64;
        let mut msg = stream.get(bits.div_ceil(8) as usize);
        mask_tail(&mut msg, bits);
        let lines: Vec<&str> = rec.lines().collect();
        assert_eq!(
            lines,
            [
                format!("Msg_Len = {bits}"),
                format!("Msg = {}", hex(&msg)),
                "Dst_Len = 256".into(),
                format!("Dst = {}", hex(&sha256_by_bits(&msg, bits)))
            ],
            "record {bits}"
        );
    }
    let last: Vec<&str> = records[4096].lines().collect();
    assert_eq!(last[0], "Msg_Len = 4096");
    assert_eq!(last[1].len(), "Msg = ".len() + 1024);
    assert_eq!(seed("2_12"), b"KAT_2_12".repeat(8));
    // The digest the kat.sha256 lines carry is the strict digest of this text.
    assert_eq!(kat_digest("2_12", 256), strict_digest(text.as_bytes()));
}

#[test]
fn the_strict_rule_drops_cr_trailing_blanks_and_empty_lines() {
    let clean = "Msg_Len = 0\nMsg =\nDst_Len = 256\n";
    let want = common::sha256(clean.as_bytes());
    for raw in [
        "Msg_Len = 0\nMsg = \nDst_Len = 256\n\n",
        "Msg_Len = 0\r\nMsg =\t \r\n\r\nDst_Len = 256\r\n\r\n",
        "\n\nMsg_Len = 0  \nMsg =\nDst_Len = 256",
    ] {
        assert_eq!(strict_digest(raw.as_bytes()), want, "{raw:?}");
    }
    // The same rule as the tool's own.
    let text = kat_text("2_12", 256);
    let tool = xtask::kat::canonical(text.as_bytes(), xtask::kat::Mode::Strict, None);
    assert_eq!(strict_digest(text.as_bytes()), common::sha256(&tool));
}

#[test]
fn the_big_files_and_the_loop_have_their_shape_on_small_cases() {
    // The Loop's recurrence, one round by hand.
    let m0 = bytes(1024, "loop");
    let mut m = m0.clone();
    let h0: [u8; 32] = Sha256::digest(&m0).into();
    let mut want = [&m0[32..], &m0[..32]].concat();
    for j in 0..32 {
        want[j] ^= h0[j];
    }
    assert_eq!(loop_digest(&mut m, 32, 1), <[u8; 32]>::from(Sha256::digest(&want)));
    assert_eq!(m, want);
    let mut m = m0.clone();
    assert_eq!(loop_digest(&mut m, 32, 0), h0);

    // 2_23 (3 MiB of hashing): three records, ends and seeds as the driver prints them.
    let text = kat_text("2_23", 256);
    let records: Vec<&str> = text.split_terminator("\n\n").collect();
    assert_eq!(records.len(), 3);
    let zeros: [u8; 32] = Sha256::digest(vec![0u8; 1 << 20]).into();
    let ones: [u8; 32] = Sha256::digest(vec![0xFFu8; 1 << 20]).into();
    let random = Drng::new(&seed("2_23")).get(1 << 20);
    let rh: [u8; 32] = Sha256::digest(&random).into();
    let rec = |s: &str, first: &str, last: &str, h: &[u8]| {
        format!("Msg_Len = 8388608\nMsg_Seed = {s}\nMsg_Exp = {first} .... {last}\nDst_Len = 256\nDst = {}", hex(h))
    };
    assert_eq!(records[0], rec("", "0000000000000000", "0000000000000000", &zeros));
    assert_eq!(records[1], rec("", "FFFFFFFFFFFFFFFF", "FFFFFFFFFFFFFFFF", &ones));
    let s = hex(&seed("2_23"));
    assert_eq!(s.len(), 128);
    assert_eq!(records[2], rec(&s, &hex(&random[..8]), &hex(&random[random.len() - 8..]), &rh));
}

#[test]
fn the_archive_has_each_instances_files_and_the_manifest_its_fields() {
    let tmp = tempfile::tempdir().unwrap();
    let (root, zip) = write_archive(tmp.path(), INSTANCES);
    assert!(root.ends_with("Hash Fixture/Implementations/Reference_Implementation"));
    for (label, macros, bits, _) in INSTANCES {
        let d = root.join(label);
        let h = std::fs::read_to_string(d.join(format!("CryptHash_{label}.h"))).unwrap();
        assert_eq!(h, header(label, macros, *bits));
        assert!(h.contains(&format!("#define DIGEST_BIT_LENGTH {bits}\n")) && h.contains("#include \"drng.h\""));
        let c = std::fs::read_to_string(d.join(format!("CryptHash_{label}.c"))).unwrap();
        assert!(c.starts_with(&format!("#include \"CryptHash_{label}.h\"\n")));
        let drng = std::fs::read(d.join("drng.c")).unwrap();
        assert_eq!(drng, std::fs::read(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixture/hash_drng.c")).unwrap());
        assert!(d.join("drng.h").is_file() && d.join("mix.h").is_file());
        assert!(std::fs::read_to_string(d.join("KAT_CryptHash.c")).unwrap().starts_with("#error"));
    }
    // Read through the tool's own manifest type (its checks included).
    let path = camino::Utf8PathBuf::from_path_buf(tmp.path().join("fixture-hash.toml")).unwrap();
    let m = xtask::compile::submission::Submission::from_text(&path, &manifest(&zip, INSTANCES)).unwrap();
    assert_eq!((m.id.as_str(), m.family), ("fixture-hash", xtask::family::FamilyId::Hash));
    let xtask::compile::submission::SourceSpec::Archive { bytes, .. } = m.source else { panic!("an archive") };
    assert_eq!(bytes, std::fs::metadata(&zip).unwrap().len());
    assert_eq!(m.kat.program, ["driver:iccs_hash_kat.c"]);
    assert_eq!(m.instances.len(), 9);
    let inst = |l: &str| m.instances.iter().find(|i| i.label == l).unwrap();
    assert_eq!((inst("h-width").digest_bits, inst("h-good").digest_bits), (Some(512), Some(256)));
    assert_eq!(inst("h-slowloop").timeout, Some(8));
    assert_eq!(m.instances.iter().filter(|i| i.timeout.is_some()).count(), 1);
}

/// The four digests of the kat.sha256 lines and how long each takes (2_33: 3 GiB of
/// SHA-256 and 1 GiB of DRNG output).
#[test]
#[ignore = "about ten seconds: the 1 GiB messages of 2_33 and the 10^6 rounds of the Loop"]
fn kat_digests_of_the_four_files_with_timings() {
    for part in PARTS {
        let t = Instant::now();
        let d = kat_digest(part, 256);
        eprintln!("kat_digest({part}, 256) = {d}  [{:.2} s]", t.elapsed().as_secs_f64());
        assert_eq!(d.len(), 64);
    }
    let mut records = 0;
    kat_records("Loop", 256, &mut |_| records += 1);
    assert_eq!(records, 2);
    // The kat.sha256 lines: four per instance, the same four digests for all of them.
    let t = Instant::now();
    let k = kat_manifest(INSTANCES);
    eprintln!("kat_manifest (cached digests) [{:.2} s]", t.elapsed().as_secs_f64());
    let lines: Vec<&str> = k.lines().filter(|l| !l.starts_with('#')).collect();
    assert_eq!(lines.len(), 4 * INSTANCES.len());
    assert_eq!(lines[0], format!("{} strict h-good/KAT_2_12_h-good.txt", kat_digest("2_12", 256)));
    assert_eq!(lines[35], format!("{} strict h-content/KAT_Loop_h-content.txt", kat_digest("Loop", 256)));
}

/// kat_manifest from nothing: the four digests computed side by side.
#[test]
#[ignore = "about five seconds"]
fn kat_manifest_from_cold() {
    let t = Instant::now();
    let k = kat_manifest(INSTANCES);
    eprintln!("kat_manifest (cold) [{:.2} s]", t.elapsed().as_secs_f64());
    assert_eq!(k.lines().count(), 1 + 36);
}
