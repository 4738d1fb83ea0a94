//! The evidence layout of a run, in one place:
//!
//! ```text
//! <out>/<system>/kat/<id>/<label>.log        KAT text exactly as generated
//! <out>/<system>/kat/<id>/<label>.build.log  compiler output
//! <out>/<system>/kat/<id>/summary.json       one verify run of one submission
//! <out>/<system>/records/<id>/<label>__<op>.json  one timed operation
//! <out>/<system>/records/<id>/size_audit.json     API sizes against the catalog
//! ```

use camino::{Utf8Path, Utf8PathBuf};

pub struct Layout {
    pub system_dir: Utf8PathBuf,
}

impl Layout {
    pub fn new(out: &Utf8Path, system: &str) -> Layout {
        Layout { system_dir: out.join(system) }
    }

    pub fn kat_dir(&self, id: &str) -> Utf8PathBuf {
        self.system_dir.join("kat").join(id)
    }

    pub fn kat_log(&self, id: &str, label: &str) -> Utf8PathBuf {
        self.kat_dir(id).join(format!("{label}.log"))
    }

    pub fn build_log(&self, id: &str, label: &str) -> Utf8PathBuf {
        self.kat_dir(id).join(format!("{label}.build.log"))
    }

    pub fn kat_summary(&self, id: &str) -> Utf8PathBuf {
        self.kat_dir(id).join("summary.json")
    }

    pub fn records_dir(&self, id: &str) -> Utf8PathBuf {
        self.system_dir.join("records").join(id)
    }

    pub fn record(&self, id: &str, label: &str, op: &str) -> Utf8PathBuf {
        self.records_dir(id).join(format!("{label}__{op}.json"))
    }

    pub fn size_audit(&self, id: &str) -> Utf8PathBuf {
        self.records_dir(id).join("size_audit.json")
    }
}
