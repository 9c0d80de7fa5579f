//! `| line_format "…"` and `| label_format a=b, c="{{…}}"`.

use super::labels::LabelsBuilder;
use super::template::{Context, Template};
use runakefli_logql::LabelFormatOp;

/// Error name set when a template fails.
pub const ERR_TEMPLATE: &str = "TemplateFormatErr";

struct Ctx<'a> {
    lbs: &'a LabelsBuilder,
    line: &'a str,
    ts: i64,
}

impl Context for Ctx<'_> {
    fn field(&self, name: &str) -> Option<&str> {
        self.lbs.get(name)
    }
    fn line(&self) -> &str {
        self.line
    }
    fn timestamp(&self) -> i64 {
        self.ts
    }
}

/// A compiled `line_format`.
#[derive(Debug)]
pub struct LineFormat {
    template: Template,
}

impl LineFormat {
    /// Parses the template; errors use Loki's wording.
    pub fn new(src: &str) -> Result<Self, String> {
        let template = Template::parse("line", src).map_err(|e| {
            format!(
                "stage '| line_format {}' : invalid line template: {e}",
                runakefli_model::labels::quote_go(src)
            )
        })?;
        Ok(LineFormat { template })
    }

    /// Rewrites `line`; on failure keeps it and sets the error labels.
    pub fn process(&self, ts: i64, line: &mut String, lbs: &mut LabelsBuilder) {
        let r = self.template.execute(&Ctx { lbs, line, ts });
        match r {
            Ok(new) => *line = new,
            Err(e) => {
                lbs.set_err(ERR_TEMPLATE);
                lbs.set_err_details(&e);
            }
        }
    }
}

enum Op {
    Rename { dst: String, src: String },
    Template { dst: String, template: Template },
}

/// A compiled `label_format`.
pub struct LabelFormat {
    ops: Vec<Op>,
}

impl std::fmt::Debug for LabelFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "LabelFormat({} ops)", self.ops.len())
    }
}

impl LabelFormat {
    /// Compiles the operations.
    pub fn new(ops: &[LabelFormatOp]) -> Result<Self, String> {
        let mut out = Vec::new();
        let mut seen: Vec<&str> = Vec::new();
        for op in ops {
            let dst = match op {
                LabelFormatOp::Rename { dst, .. } | LabelFormatOp::Template { dst, .. } => {
                    dst.as_str()
                }
            };
            if seen.contains(&dst) {
                return Err(format!("label_format: multiple label name '{dst}' not allowed in a single format operation"));
            }
            seen.push(dst);
            out.push(match op {
                LabelFormatOp::Rename { dst, src } => Op::Rename { dst: dst.clone(), src: src.clone() },
                LabelFormatOp::Template { dst, template } => Op::Template {
                    dst: dst.clone(),
                    template: Template::parse("label", template).map_err(|e| {
                        format!(
                            "stage '| label_format {dst}={}' : invalid template for label '{dst}': {e}",
                            runakefli_model::labels::quote_go(template)
                        )
                    })?,
                },
            });
        }
        Ok(LabelFormat { ops: out })
    }

    /// Applies the operations; templates see the labels as they were before the stage.
    pub fn process(&self, ts: i64, line: &str, lbs: &mut LabelsBuilder) {
        let mut results: Vec<(String, Result<String, String>)> = Vec::with_capacity(self.ops.len());
        for op in &self.ops {
            if let Op::Template { dst, template } = op {
                results.push((dst.clone(), template.execute(&Ctx { lbs, line, ts })));
            }
        }
        let mut renames: Vec<(String, Option<String>, String)> = Vec::new();
        for op in &self.ops {
            if let Op::Rename { dst, src } = op {
                renames.push((dst.clone(), lbs.get(src).map(str::to_string), src.clone()));
            }
        }
        for (dst, v, src) in renames {
            if let Some(v) = v {
                lbs.del(&src);
                lbs.set(&dst, &v);
            }
        }
        for (dst, r) in results {
            match r {
                Ok(v) => lbs.set(&dst, &v),
                Err(e) => {
                    lbs.set_err(ERR_TEMPLATE);
                    lbs.set_err_details(&e);
                }
            }
        }
    }
}
