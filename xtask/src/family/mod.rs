//! What a primitive family is: its operations, its size names, its drivers and the page
//! text it contributes. Commands ask the family (`sub.family()`); nothing else matches
//! on it. Adding a family is one more [`Family`] value here, its drivers in `drivers/`,
//! and, when it corroborates a matching digest, one module beside `kem.rs` and `sig.rs`.

pub mod kem;
pub mod sig;

use serde::{Deserialize, Serialize};

use crate::build::builder::Build;
use crate::container::sandbox::Sandbox;
use crate::evidence::schema::Check;
pub use crate::evidence::schema::OpId;

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
}

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

/// What a corroborating check runs with: one build, its sandbox, a time limit.
pub struct CheckCtx<'a> {
    pub sh: &'a xshell::Shell,
    pub sb: &'a Sandbox,
    pub build: &'a Build,
    pub timeout: std::time::Duration,
}

impl CheckCtx<'_> {
    /// One run of `driver` with `args` and `stdin`, its stdout up to `cap` bytes; the
    /// program's failure (with the tail of its stderr) as the inner error.
    pub fn run(
        &self,
        driver: Driver,
        args: &[&str],
        stdin: Vec<u8>,
        cap: u64,
    ) -> anyhow::Result<Result<Vec<u8>, String>> {
        let mut argv = vec![driver.program.to_owned()];
        argv.extend(args.iter().map(|a| (*a).to_owned()));
        let mut job = self.build.run_job(self.sb.backend, &argv, self.timeout);
        job.stdin = Some(stdin);
        let (f, out) = self.sb.run_captured(self.sh, &job, cap)?;
        if !f.outcome.success() {
            let stderr = crate::project::printable(f.stderr.trim_end());
            let lines: Vec<&str> = stderr.lines().collect();
            let tail = lines[lines.len().saturating_sub(4)..].join("\n");
            return Ok(Err(format!("`{}` {}: {tail}", argv.join(" "), f.outcome)));
        }
        Ok(Ok(out))
    }
}

#[derive(Debug)]
pub struct Family {
    pub id: FamilyId,
    /// What one candidate is called in messages (`signature`).
    pub noun: &'static str,
    /// Page §1: "function: ...".
    pub function: &'static str,
    pub ops: &'static [Operation],
    pub sizes: &'static [SizeName],
    /// The timing driver and the prefix of its API adapters (`<prefix><api>.h`).
    pub bench: Driver,
    pub adapter_prefix: &'static str,
    pub corroboration: Option<Corroboration>,
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
}

const fn op(id: &'static str) -> Operation {
    Operation { id, default: true }
}

const PK: SizeName = SizeName { id: "pk", field: "public_key", heading: "public key", external: true };
const SK: SizeName = SizeName { id: "sk", field: "secret_key", heading: "secret key", external: false };

pub static KEM: Family = Family {
    id: FamilyId::Kem,
    noun: "KEM",
    function: "key encapsulation",
    ops: &[op("keygen"), op("enc"), op("dec"), Operation { id: "nop", default: false }],
    sizes: &[
        PK,
        SK,
        SizeName { id: "ct", field: "ciphertext", heading: "ciphertext", external: true },
        SizeName { id: "ss", field: "shared_secret", heading: "shared secret", external: true },
    ],
    bench: Driver { source: "kem_bench.c", program: "kem_bench" },
    adapter_prefix: "bench_",
    corroboration: Some(kem::REPLAY),
    kat_lengths: false,
    variable_output: None,
    retried: "failed attempts",
    catalog: "external_sizes.csv",
    sizes_section: true,
    symmetric_section: true,
};

pub static SIG: Family = Family {
    id: FamilyId::Sig,
    noun: "signature",
    function: "digital signature",
    ops: &[op("keygen"), op("sign"), op("verify"), op("sign_msgs"), Operation { id: "nop", default: false }],
    sizes: &[PK, SK, SizeName { id: "sig", field: "signature", heading: "signature", external: true }],
    bench: Driver { source: "sig_bench.c", program: "sig_bench" },
    adapter_prefix: "sig_bench_",
    corroboration: Some(sig::CONTRACT),
    kat_lengths: true,
    variable_output: Some("sig"),
    retried: "failed signing attempts retried",
    catalog: "external_sizes_sig.csv",
    sizes_section: true,
    symmetric_section: true,
};

impl FamilyId {
    /// The family's definition. Hash and key exchange are named so that their manifests
    /// are refused with a clear message until their drivers exist.
    pub fn get(self) -> anyhow::Result<&'static Family> {
        match self {
            FamilyId::Kem => Ok(&KEM),
            FamilyId::Sig => Ok(&SIG),
            FamilyId::Hash | FamilyId::Kex => {
                anyhow::bail!("family {self}: this harness has no drivers for it yet")
            }
        }
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

    /// Whether `build` has this family's corroborating program (its manifest gives an
    /// API adapter).
    pub fn corroborates(&self, build: &Build) -> Option<&Corroboration> {
        self.corroboration.as_ref().filter(|c| build.record.output_sha256(c.driver.program).is_some())
    }

    pub fn size(&self, field: &str) -> Option<&SizeName> {
        self.sizes.iter().find(|s| s.field == field)
    }
}

/// Every family with drivers, for readers that meet evidence of any family.
pub fn all() -> [&'static Family; 2] {
    [&KEM, &SIG]
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
        assert!(FamilyId::Hash.get().is_err());
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
