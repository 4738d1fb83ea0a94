//! What a primitive family is: its operations, its size names, its drivers and the page
//! text it contributes. Commands ask the family (`sub.family()`); nothing else matches
//! on it. Adding a family is one more [`Family`] value here, its drivers in `drivers/`,
//! and, when it corroborates a matching digest or adds page text, one module beside
//! `kem.rs`, `sig.rs` and `kex.rs`.

pub mod kem;
pub mod kex;
pub mod sig;

use serde::{Deserialize, Serialize};

pub use crate::evidence::schema::OpId;
use crate::evidence::schema::{Check, CheckVerdict};

/// The family a manifest names (`family = "sig"`); absent means a KEM.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FamilyId {
    #[default]
    Kem,
    Sig,
    Hash,
    Kex,
}

impl FamilyId {
    pub const ALL: [FamilyId; 4] = [FamilyId::Kem, FamilyId::Sig, FamilyId::Hash, FamilyId::Kex];
}

/// A harness driver: its source in `drivers/` and the program built from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Driver {
    pub source: &'static str,
    pub program: &'static str,
}

/// One size an instance of the family reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SizeName {
    /// Key in drivers' JSON and in evidence (`pk`).
    pub id: &'static str,
    /// Column of the size catalog and of the size audit (`public_key`).
    pub field: &'static str,
    /// Page heading (`public key`).
    pub heading: &'static str,
    /// Taken from the catalog when it has a row (secret keys are API figures).
    pub external: bool,
}

/// One operation the timing driver knows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Operation {
    pub id: &'static str,
    /// Timed by default (others only on `--op`).
    pub default: bool,
    /// The message it processes, for per-byte figures (`hash_4096`: 4096).
    pub bytes: Option<u64>,
    /// A message pass of a key exchange (`pass3`: 3): timed for instances with at least
    /// that many passes; 0 for every other operation.
    pub pass: u32,
}

/// One KAT file an instance's KAT program writes. A family whose program writes one file
/// has one part with no argument; hash programs write four, one per process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KatPart {
    /// Its name for `--kat-files`, the program's argument and the log name (`2_12`);
    /// empty for a family's only file.
    pub id: &'static str,
    /// Put before the manifest's `[kat] file` (`KAT_2_12_`).
    pub prefix: &'static str,
    /// What it holds, for pages and `--help`.
    pub what: &'static str,
}

/// The one KAT file of KEM and signature programs.
const ONE_FILE: &[KatPart] = &[KatPart { id: "", prefix: "", what: "the KAT file" }];

/// The check that runs after a matching digest, on inputs drawn at run time.
#[derive(Clone, Copy)]
pub struct Corroboration {
    pub driver: Driver,
    /// Its name in evidence and on pages (`replay`, `verify contract`).
    pub name: &'static str,
    /// A failure makes the KAT status MISMATCH (the text was not computed), or stands as
    /// a verdict of its own next to the status.
    pub failure_is_mismatch: bool,
    /// Run also beside a MISMATCH (a verdict of its own says something there too).
    pub on_mismatch: bool,
    /// What a page says a holding check did, and says where the manifest gives no API.
    pub holds: &'static str,
    pub absent: &'static str,
    /// Run it: a failure of the candidate's program is a verdict; an engine failure or an
    /// interruption an error.
    pub run: fn(&CheckCtx) -> anyhow::Result<Check>,
}

impl std::fmt::Debug for Corroboration {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name)
    }
}

/// Runs one program of a build in its sandbox, with its time limit: the one thing a
/// corroborating check needs from the layers that may run code (`kat::verify` gives it).
pub trait RunProgram {
    /// `argv` (the build's program first) with `stdin`, its stdout up to `cap` bytes; the
    /// program's failure, described, as the inner error.
    fn run(&self, argv: &[String], stdin: &[u8], cap: u64) -> anyhow::Result<Result<Vec<u8>, String>>;
}

/// What a corroborating check runs with.
pub struct CheckCtx<'a> {
    pub runs: &'a dyn RunProgram,
}

impl CheckCtx<'_> {
    /// One run of `driver` with `args` and `stdin` (which follows the mode line, when the
    /// driver is a mode of the build's one program), its stdout up to `cap` bytes.
    pub fn run(
        &self,
        driver: Driver,
        args: &[&str],
        stdin: Vec<u8>,
        cap: u64,
    ) -> anyhow::Result<Result<Vec<u8>, String>> {
        let mut argv = vec![driver.program.to_owned()];
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        self.runs.run(&argv, &stdin, cap)
    }

    /// One run of a check program on `<nonce>\n` and `lines`, each ended by `\n`; what it
    /// printed is judged by `judge`. A failed program or output `judge` refuses is `Fails`.
    pub fn judged(
        &self,
        driver: Driver,
        nonce: &str,
        lines: &[String],
        cap: u64,
        judge: impl Fn(&[u8]) -> Result<(CheckVerdict, String), String>,
    ) -> anyhow::Result<(CheckVerdict, String)> {
        let mut input = format!("{nonce}\n");
        lines.iter().for_each(|s| input.push_str(&format!("{s}\n")));
        Ok(match self.run(driver, &[], input.into_bytes(), cap)? {
            Err(why) => (CheckVerdict::Fails, why),
            Ok(out) => {
                judge(&out).unwrap_or_else(|why| (CheckVerdict::Fails, format!("`{}` printed {why}", driver.program)))
            }
        })
    }
}

/// The constant-time check of a family (`ct`): its driver, built with the family's API
/// adapter, and the operations that handle secrets.
#[derive(Debug, Clone, Copy)]
pub struct CtCheck {
    pub driver: Driver,
    pub ops: &'static [CtOp],
}

/// One operation `ct` runs, and what it makes secret (for pages and `--help`).
#[derive(Debug, Clone, Copy)]
pub struct CtOp {
    pub id: &'static str,
    pub secrets: &'static str,
    /// When it also gets the timing test.
    pub timed: CtTimed,
}

/// When an operation gets `ct`'s timing test.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CtTimed {
    /// Always (a KEM's decapsulation).
    Always,
    /// When memcheck reported something.
    OnFindings,
}

#[derive(Debug)]
pub struct Family {
    pub id: FamilyId,
    /// What one candidate is called in messages (`signature`).
    pub noun: &'static str,
    /// Page §1: "Category: ...; function: ...".
    pub category: &'static str,
    pub function: &'static str,
    /// The KAT files of one instance, in page order.
    pub kat_parts: &'static [KatPart],
    /// Each instance names its digest width (`digest_bits`), which the drivers get as
    /// `NGCC_DIGEST_BITS`.
    pub digest_width: bool,
    /// Each instance names its number of message passes (`passes`), which the drivers
    /// get as `NGCC_KEX_PASSES` and the library must declare.
    pub passes: bool,
    pub ops: &'static [Operation],
    pub sizes: &'static [SizeName],
    /// The timing driver and the prefix of its API adapters (`<prefix><api>.h`).
    pub bench: Driver,
    pub adapter_prefix: &'static str,
    pub corroboration: Option<Corroboration>,
    /// The check that the API answers tampered inputs safely, recorded beside the KAT
    /// status whatever it is (a KEM's tampered ciphertexts, a key exchange's tampered pass
    /// messages; a signature's contract already covers its tampered signatures; a hash
    /// has no input to reject).
    pub tampered: Option<Corroboration>,
    /// In/out lengths pass from record to record in its KAT driver (`kat.lengths`).
    pub kat_lengths: bool,
    /// The size whose returned length varies per call (a signature), if any.
    pub variable_output: Option<&'static str>,
    /// What retried failures of an operation are called on pages.
    pub retried: &'static str,
    /// The size catalog of this family's columns (`submissions/<file>`).
    pub catalog: &'static str,
    /// Page §6 and "Symmetric primitives" exist for this family.
    pub sizes_section: bool,
    pub symmetric_section: bool,
    /// The submission timed beside every one of this family, in the same run, that its
    /// pages compare with (`submissions/<id>.toml`).
    pub baseline: Option<&'static str>,
    /// More of page §6, from one record per instance (a key exchange's bandwidth).
    pub sizes_extra: Option<fn(&[&crate::evidence::schema::Record]) -> String>,
    /// What `profile` times when no `--op` is given; empty: the default operations.
    pub profiled: &'static [&'static str],
    /// The operations the KAT program calls once per record, whose timed figures the
    /// KAT run's CPU must not far exceed (`bench::kat_cross_check`); empty: no check.
    pub kat_calls: &'static [&'static str],
    /// The constant-time check; None where no operation has a secret input (a hash).
    pub ct: Option<CtCheck>,
    /// This family in NGCC round 1.
    pub field: Field,
}

/// A family's share of NGCC round 1: its candidates are `<prefix>-01` to
/// `<prefix>-<candidates>`, with `instances` parameter sets among them (the catalog's
/// instance lists).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    pub prefix: &'static str,
    pub candidates: u32,
    pub instances: u32,
}

impl Field {
    /// Whether `id` names one of the field's candidates (`kem-07`, not `kem-7` or `kem-42`).
    pub fn holds(&self, id: &str) -> bool {
        let Some(n) = id.strip_prefix(self.prefix).and_then(|r| r.strip_prefix('-')) else { return false };
        n.len() == 2 && n.parse::<u32>().is_ok_and(|n| (1..=self.candidates).contains(&n))
    }
}

const fn op(id: &'static str) -> Operation {
    Operation { id, default: true, bytes: None, pass: 0 }
}

const fn hash_op(id: &'static str, bytes: u64) -> Operation {
    Operation { id, default: true, bytes: Some(bytes), pass: 0 }
}

const fn pass_op(id: &'static str, pass: u32) -> Operation {
    Operation { id, default: true, bytes: None, pass }
}

const DRNG: &str = "the DRNG output";

const NOP: Operation = Operation { id: "nop", default: false, bytes: None, pass: 0 };
const PUBLIC_KEY: &str = "public-key algorithm";

const PK: SizeName = SizeName { id: "pk", field: "public_key", heading: "public key", external: true };
const SK: SizeName = SizeName { id: "sk", field: "secret_key", heading: "secret key", external: false };
const SS: SizeName = SizeName { id: "ss", field: "shared_secret", heading: "shared secret", external: true };

pub static KEM: Family = Family {
    id: FamilyId::Kem,
    noun: "KEM",
    field: Field { prefix: "kem", candidates: 41, instances: 189 },
    category: PUBLIC_KEY,
    function: "key encapsulation",
    kat_parts: ONE_FILE,
    digest_width: false,
    passes: false,
    ops: &[op("keygen"), op("enc"), op("dec"), NOP],
    sizes: &[PK, SK, SizeName { id: "ct", field: "ciphertext", heading: "ciphertext", external: true }, SS],
    bench: Driver { source: "kem_bench.c", program: "kem_bench" },
    adapter_prefix: "bench_",
    corroboration: Some(kem::REPLAY),
    tampered: Some(kem::TAMPER),
    kat_lengths: false,
    variable_output: None,
    retried: "failed attempts",
    catalog: "external_sizes.csv",
    sizes_section: true,
    symmetric_section: true,
    baseline: None,
    sizes_extra: None,
    profiled: &[],
    kat_calls: &["keygen", "enc", "dec"],
    ct: Some(CtCheck {
        driver: Driver { source: "kem_ct.c", program: "kem_ct" },
        ops: &[
            CtOp { id: "keygen", secrets: DRNG, timed: CtTimed::OnFindings },
            CtOp { id: "enc", secrets: DRNG, timed: CtTimed::OnFindings },
            CtOp { id: "dec", secrets: "the secret key", timed: CtTimed::Always },
        ],
    }),
};

pub static SIG: Family = Family {
    id: FamilyId::Sig,
    noun: "signature",
    field: Field { prefix: "sign", candidates: 34, instances: 198 },
    category: PUBLIC_KEY,
    function: "digital signature",
    kat_parts: ONE_FILE,
    digest_width: false,
    passes: false,
    ops: &[op("keygen"), op("sign"), op("verify"), op("sign_msgs"), NOP],
    sizes: &[PK, SK, SizeName { id: "sig", field: "signature", heading: "signature", external: true }],
    bench: Driver { source: "sig_bench.c", program: "sig_bench" },
    adapter_prefix: "sig_bench_",
    corroboration: Some(sig::CONTRACT),
    tampered: None,
    kat_lengths: true,
    variable_output: Some("sig"),
    retried: "failed signing attempts retried",
    catalog: "external_sizes_sig.csv",
    sizes_section: true,
    symmetric_section: true,
    baseline: None,
    sizes_extra: None,
    profiled: &[],
    kat_calls: &["keygen", "sign", "verify"],
    ct: Some(CtCheck {
        driver: Driver { source: "sig_ct.c", program: "sig_ct" },
        ops: &[
            CtOp { id: "keygen", secrets: DRNG, timed: CtTimed::OnFindings },
            CtOp { id: "sign", secrets: "the secret key and the DRNG output", timed: CtTimed::OnFindings },
        ],
    }),
};

/// The guide's hash message sizes S1–S8 in bytes, one operation each.
pub const HASH_SIZES: [u64; 8] = [32, 128, 512, 1024, 4096, 8192, 16384, 65536];

pub static HASH: Family = Family {
    id: FamilyId::Hash,
    noun: "hash function",
    field: Field { prefix: "hash", candidates: 35, instances: 141 },
    category: "cryptographic hash algorithm",
    function: "hash",
    kat_parts: &[
        KatPart { id: "2_12", prefix: "KAT_2_12_", what: "messages of 0 to 4096 bits (4097 records)" },
        KatPart { id: "2_23", prefix: "KAT_2_23_", what: "three messages of 2^23 bits (1 MiB)" },
        KatPart { id: "2_33", prefix: "KAT_2_33_", what: "three messages of 2^33 bits (1 GiB)" },
        KatPart { id: "Loop", prefix: "KAT_Loop_", what: "10^6 chained hashes of an 8192-bit message" },
    ],
    digest_width: true,
    passes: false,
    ops: &[
        hash_op("hash_32", 32),
        hash_op("hash_128", 128),
        hash_op("hash_512", 512),
        hash_op("hash_1024", 1024),
        hash_op("hash_4096", 4096),
        hash_op("hash_8192", 8192),
        hash_op("hash_16384", 16384),
        hash_op("hash_65536", 65536),
        NOP,
    ],
    sizes: &[SizeName { id: "digest", field: "digest", heading: "digest", external: false }],
    bench: Driver { source: "hash_bench.c", program: "hash_bench" },
    adapter_prefix: "hash_bench_",
    corroboration: None,
    tampered: None,
    kat_lengths: false,
    variable_output: None,
    retried: "failed calls retried",
    // The digest width is the manifest's: no catalog, no section 6.
    catalog: "",
    sizes_section: false,
    symmetric_section: false,
    baseline: Some("baseline-hash"),
    sizes_extra: None,
    profiled: &[],
    // Four files of very different messages: no one figure per record.
    kat_calls: &[],
    ct: None,
};

/// The most message passes the drivers replay (`drivers/kex_passes.h`).
pub const MAX_PASSES: u32 = 8;

pub static KEX: Family = Family {
    id: FamilyId::Kex,
    noun: "key exchange",
    field: Field { prefix: "kex", candidates: 9, instances: 57 },
    category: PUBLIC_KEY,
    function: "key exchange",
    kat_parts: ONE_FILE,
    digest_width: false,
    passes: true,
    ops: &[
        op("exchange"),
        op("init_a"),
        op("init_b"),
        pass_op("pass1", 1),
        pass_op("pass2", 2),
        pass_op("pass3", 3),
        pass_op("pass4", 4),
        pass_op("pass5", 5),
        pass_op("pass6", 6),
        pass_op("pass7", 7),
        pass_op("pass8", 8),
        op("derive_a"),
        op("derive_b"),
        NOP,
    ],
    sizes: &[
        PK,
        SK,
        SizeName { id: "msgs", field: "protocol_messages", heading: "protocol messages", external: true },
        SS,
    ],
    bench: Driver { source: "kex_bench.c", program: "kex_bench" },
    adapter_prefix: "kex_bench_",
    corroboration: Some(kex::CONTRACT),
    tampered: Some(kex::TAMPER),
    kat_lengths: true,
    variable_output: None,
    retried: "failed calls retried",
    catalog: "external_sizes_kex.csv",
    sizes_section: true,
    symmetric_section: true,
    baseline: None,
    sizes_extra: Some(kex::bandwidth),
    // The reference pages profile the whole protocol.
    profiled: &["exchange"],
    // A record is one whole exchange: both sides' keys, every pass, both secrets.
    kat_calls: &["exchange"],
    ct: Some(CtCheck {
        driver: Driver { source: "kex_ct.c", program: "kex_ct" },
        ops: &[
            CtOp { id: "init", secrets: DRNG, timed: CtTimed::OnFindings },
            CtOp {
                id: "passes",
                secrets: "both sides' secret keys and states, and the DRNG output",
                timed: CtTimed::OnFindings,
            },
            CtOp { id: "derive", secrets: "both sides' secret keys and states", timed: CtTimed::OnFindings },
        ],
    }),
};

impl FamilyId {
    /// The family's definition.
    pub fn get(self) -> anyhow::Result<&'static Family> {
        Ok(match self {
            FamilyId::Kem => &KEM,
            FamilyId::Sig => &SIG,
            FamilyId::Hash => &HASH,
            FamilyId::Kex => &KEX,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            FamilyId::Kem => "kem",
            FamilyId::Sig => "sig",
            FamilyId::Hash => "hash",
            FamilyId::Kex => "kex",
        }
    }
}

impl std::fmt::Display for FamilyId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

impl Family {
    /// The operations timed when none is asked for, in page order.
    pub fn default_ops(&self) -> Vec<OpId> {
        self.ops.iter().filter(|o| o.default).map(|o| OpId::new(o.id)).collect()
    }

    /// Every operation in page order (what a page or a reader looks for).
    pub fn all_ops(&self) -> Vec<OpId> {
        self.ops.iter().map(|o| OpId::new(o.id)).collect()
    }

    /// `asked`, checked against this family's operations; the defaults when empty.
    pub fn select_ops(&self, asked: &[String]) -> anyhow::Result<Vec<OpId>> {
        if asked.is_empty() {
            return Ok(self.default_ops());
        }
        let known: Vec<&str> = self.ops.iter().map(|o| o.id).collect();
        asked
            .iter()
            .map(|a| match known.contains(&a.as_str()) {
                true => Ok(OpId::new(a)),
                false => crate::ui::usage(format!(
                    "--op {a}: a {} has the operations {}{}",
                    self.noun,
                    known.join(", "),
                    crate::project::suggest(a, known.iter().copied())
                )),
            })
            .collect()
    }

    /// `asked` (or the defaults), without the passes `passes` instances do not have.
    pub fn ops_for(&self, asked: &[String], passes: Option<u32>) -> anyhow::Result<Vec<OpId>> {
        let has = |id: &OpId| self.ops.iter().find(|o| o.id == id.name()).is_none_or(|o| o.pass <= passes.unwrap_or(0));
        Ok(self.select_ops(asked)?.into_iter().filter(has).collect())
    }

    /// What `profile` times: `asked`, else the family's profiled operations.
    pub fn profile_ops_for(&self, asked: &[String], passes: Option<u32>) -> anyhow::Result<Vec<OpId>> {
        let own: Vec<String> = self.profiled.iter().map(|s| (*s).to_owned()).collect();
        self.ops_for(if asked.is_empty() { &own } else { asked }, passes)
    }

    /// Whether `build` has this family's corroborating program (its manifest gives an
    /// API adapter).
    pub fn corroborates(&self, build: &crate::evidence::schema::BuildRecord) -> Option<&Corroboration> {
        self.corroboration.as_ref().filter(|c| build.program_sha256(c.driver.program).is_some())
    }

    /// The tampered-input check, when the build has its driver.
    pub fn tampers(&self, build: &crate::evidence::schema::BuildRecord) -> Option<&Corroboration> {
        self.tampered.as_ref().filter(|c| build.program_sha256(c.driver.program).is_some())
    }

    pub fn size(&self, field: &str) -> Option<&SizeName> {
        self.sizes.iter().find(|s| s.field == field)
    }

    /// The message an operation hashes (`hash_4096`: 4096); None for every other.
    pub fn message_bytes(&self, op: &OpId) -> Option<u64> {
        self.ops.iter().find(|o| o.id == op.name()).and_then(|o| o.bytes)
    }
}

/// Every family, for readers that meet evidence of any family.
pub fn all() -> [&'static Family; 4] {
    [&KEM, &SIG, &HASH, &KEX]
}

/// Whether `id` is a family's same-run baseline (timed whole, beside the family's
/// submissions).
pub fn is_baseline(id: &str) -> bool {
    all().iter().any(|f| f.baseline == Some(id))
}

/// The size name of a catalog column, in whichever family has it.
pub fn size_by_field(field: &str) -> Option<&'static SizeName> {
    all().into_iter().find_map(|f| f.size(field))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn operations_are_checked_against_the_family() {
        assert_eq!(KEM.select_ops(&[]).unwrap(), [OpId::new("keygen"), OpId::new("enc"), OpId::new("dec")]);
        assert_eq!(SIG.select_ops(&["verify".into()]).unwrap(), [OpId::new("verify")]);
        let e = KEM.select_ops(&["sign".into()]).unwrap_err().to_string();
        assert!(e.contains("keygen, enc, dec, nop"), "{e}");
        assert_eq!(HASH.default_ops().len(), HASH_SIZES.len());
        assert!(HASH.ops.iter().filter_map(|o| o.bytes).eq(HASH_SIZES));
    }

    #[test]
    fn size_ids_are_unique_and_catalog_columns_mean_one_thing() {
        for f in all() {
            let mut ids: Vec<&str> = f.sizes.iter().map(|s| s.id).collect();
            ids.dedup();
            assert_eq!(ids.len(), f.sizes.len());
            for s in f.sizes {
                assert_eq!(size_by_field(s.field), Some(s), "{} means one thing in every family", s.field);
            }
        }
    }
}
