//! CSV text through the `csv` crate: every CSV file the run layer writes (numbers formatted by
//! the caller, fields quoted where they need it, `\n` line ends).
use crate::error::{Result, RunError};
use icl_core::train::Trainer;
use icl_core::Scalar;

/// The CSV text of a header and rows of formatted fields.
pub fn csv_text<H, R, F>(header: &[H], rows: R) -> Result<String>
where
    H: AsRef<[u8]>,
    R: IntoIterator<Item = Vec<F>>,
    F: AsRef<[u8]>,
{
    let mut w = csv::WriterBuilder::new()
        .flexible(true)
        .from_writer(Vec::new());
    let err = |e: csv::Error| RunError::Engine(format!("CSV: {e}"));
    w.write_record(header).map_err(err)?;
    for r in rows {
        w.write_record(&r).map_err(err)?;
    }
    let bytes = w
        .into_inner()
        .map_err(|e| RunError::Engine(format!("CSV: {e}")))?;
    String::from_utf8(bytes).map_err(|e| RunError::Engine(format!("CSV: {e}")))
}

/// A row of a metrics CSV: the step, the loss and the values, in `{:.8e}` (`short`, the
/// `metrics.csv` contract) or shortest round-trip `{:e}`.
pub fn metrics_row(step: u64, loss: f64, values: &[f64], short: bool) -> Vec<String> {
    let num = |x: &f64| {
        if short {
            format!("{x:.8e}")
        } else {
            format!("{x:e}")
        }
    };
    let mut row = vec![step.to_string(), num(&loss)];
    row.extend(values.iter().map(num));
    row
}

/// A CSV of one probe group: step and the group's columns.
pub fn group_csv<T: Scalar>(t: &Trainer<T>, group: &str) -> Result<String> {
    let mut header = vec!["step"];
    header.extend(
        t.columns()
            .iter()
            .filter(|c| c.group == group)
            .map(|c| c.name.as_str()),
    );
    let rows = t.log.iter().map(|r| {
        let mut row = vec![r.step.to_string()];
        row.extend(t.group(r, group).iter().map(|x| format!("{x:e}")));
        row
    });
    csv_text(&header, rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_are_quoted_only_where_needed() {
        let t = csv_text(
            &["run", "metric"],
            [vec!["a,b", "x\"y"], vec!["plain", "1.5e0"]],
        )
        .unwrap();
        assert_eq!(t, "run,metric\n\"a,b\",\"x\"\"y\"\nplain,1.5e0\n");
    }
}
