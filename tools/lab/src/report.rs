//! HTML report.

use std::path::Path;

use crate::error::LabError;
use crate::record::Summary;

/// Writes `report.html` into `dir`.
pub fn write_report(dir: &Path, summary: &Summary, reference: bool) -> Result<(), LabError> {
    let _ = (summary, reference);
    let p = dir.join(crate::record::files::REPORT_HTML);
    std::fs::write(&p, "<html></html>").map_err(|e| LabError::io(&p, e))
}

/// Inline stylesheet shared by the report and the comparison page.
pub const CSS: &str = "body{font-family:sans-serif}";

/// Escapes text for HTML.
pub fn html_escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}
