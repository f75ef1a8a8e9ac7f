//! Reading helpers shared by the governance and permissions parsers: every error names the
//! file, the line, the element, the offending value and what was expected.

use roxmltree::{Document, Node};

use super::{AccessError, DomainSet};

/// One document being parsed: its name (for errors) and its DOM.
pub(crate) struct Doc<'a, 'input> {
    pub(crate) file: &'a str,
    pub(crate) doc: &'a Document<'input>,
}

impl<'a, 'input> Doc<'a, 'input> {
    /// The 1-based line where `node` starts.
    pub(crate) fn line(&self, node: Node<'_, '_>) -> u32 {
        self.doc.text_pos_at(node.range().start).row
    }

    /// The element children of `node`, after checking each one's name is in `allowed`.
    pub(crate) fn children(
        &self,
        node: Node<'a, 'input>,
        allowed: &[&str],
    ) -> Result<Vec<Node<'a, 'input>>, AccessError> {
        let mut out = Vec::new();
        for child in node.children() {
            if child.is_element() {
                let name = child.tag_name().name();
                if !allowed.contains(&name) {
                    return Err(AccessError::UnexpectedElement {
                        file: self.file.to_owned(),
                        line: self.line(child),
                        element: name.to_owned(),
                        parent: node.tag_name().name().to_owned(),
                        allowed: allowed.join(", "),
                    });
                }
                out.push(child);
            } else if child.is_text() && !child.text().unwrap_or("").trim().is_empty() {
                return Err(AccessError::UnexpectedText {
                    file: self.file.to_owned(),
                    line: self.line(child),
                    element: node.tag_name().name().to_owned(),
                    text: excerpt(child.text().unwrap_or("")),
                });
            }
        }
        Ok(out)
    }

    /// The only child element named `name` of `node` (which `children` already vetted);
    /// a missing or repeated one is an error.
    pub(crate) fn one(
        &self,
        node: Node<'a, 'input>,
        kids: &[Node<'a, 'input>],
        name: &'static str,
    ) -> Result<Node<'a, 'input>, AccessError> {
        let mut found = kids.iter().filter(|k| k.tag_name().name() == name);
        let first = found.next().ok_or_else(|| AccessError::MissingElement {
            file: self.file.to_owned(),
            line: self.line(node),
            parent: node.tag_name().name().to_owned(),
            element: name,
        })?;
        if let Some(dup) = found.next() {
            return Err(AccessError::DuplicateElement {
                file: self.file.to_owned(),
                line: self.line(*dup),
                element: name,
                parent: node.tag_name().name().to_owned(),
            });
        }
        Ok(*first)
    }

    /// The at most one child element named `name`.
    pub(crate) fn opt(
        &self,
        node: Node<'a, 'input>,
        kids: &[Node<'a, 'input>],
        name: &'static str,
    ) -> Result<Option<Node<'a, 'input>>, AccessError> {
        if kids.iter().any(|k| k.tag_name().name() == name) {
            self.one(node, kids, name).map(Some)
        } else {
            Ok(None)
        }
    }

    /// The text of a leaf element, trimmed (it must not contain elements).
    pub(crate) fn text(&self, node: Node<'a, 'input>) -> Result<String, AccessError> {
        if let Some(child) = node.children().find(|c| c.is_element()) {
            return Err(AccessError::UnexpectedElement {
                file: self.file.to_owned(),
                line: self.line(child),
                element: child.tag_name().name().to_owned(),
                parent: node.tag_name().name().to_owned(),
                allowed: "(text only)".to_owned(),
            });
        }
        let mut s = String::new();
        for t in node.children().filter(|c| c.is_text()) {
            s.push_str(t.text().unwrap_or(""));
        }
        Ok(s.trim().to_owned())
    }

    /// An error for a bad value of a leaf element.
    pub(crate) fn invalid(&self, node: Node<'_, '_>, value: &str, valid: &str) -> AccessError {
        AccessError::InvalidValue {
            file: self.file.to_owned(),
            line: self.line(node),
            element: node.tag_name().name().to_owned(),
            value: excerpt(value),
            valid: valid.to_owned(),
        }
    }

    /// A boolean leaf: TRUE/FALSE in any case, or 1/0.
    pub(crate) fn boolean(&self, node: Node<'a, 'input>) -> Result<bool, AccessError> {
        let v = self.text(node)?;
        if v.eq_ignore_ascii_case("true") || v == "1" {
            Ok(true)
        } else if v.eq_ignore_ascii_case("false") || v == "0" {
            Ok(false)
        } else {
            Err(self.invalid(node, &v, "TRUE, FALSE (any case), 1, 0"))
        }
    }

    /// A domain id leaf.
    pub(crate) fn domain_id(&self, node: Node<'a, 'input>) -> Result<u32, AccessError> {
        let v = self.text(node)?;
        v.parse::<u32>()
            .map_err(|_| self.invalid(node, &v, "a domain id from 0 to 4294967295"))
    }

    /// A `domains` element: `id` and `id_range` (`min` and/or `max`, inclusive) entries.
    pub(crate) fn domains(&self, node: Node<'a, 'input>) -> Result<DomainSet, AccessError> {
        let kids = self.children(node, &["id", "id_range"])?;
        if kids.is_empty() {
            return Err(AccessError::MissingElement {
                file: self.file.to_owned(),
                line: self.line(node),
                parent: "domains".to_owned(),
                element: "id or id_range",
            });
        }
        let mut ranges = Vec::new();
        for k in kids {
            if k.tag_name().name() == "id" {
                let id = self.domain_id(k)?;
                ranges.push((id, id));
            } else {
                let parts = self.children(k, &["min", "max"])?;
                let min = self.opt(k, &parts, "min")?;
                let max = self.opt(k, &parts, "max")?;
                if min.is_none() && max.is_none() {
                    return Err(AccessError::MissingElement {
                        file: self.file.to_owned(),
                        line: self.line(k),
                        parent: "id_range".to_owned(),
                        element: "min or max",
                    });
                }
                let lo = min.map(|m| self.domain_id(m)).transpose()?.unwrap_or(0);
                let hi = max
                    .map(|m| self.domain_id(m))
                    .transpose()?
                    .unwrap_or(u32::MAX);
                if lo > hi {
                    return Err(self.invalid(
                        k,
                        &format!("min {lo} > max {hi}"),
                        "a range with min <= max",
                    ));
                }
                ranges.push((lo, hi));
            }
        }
        Ok(DomainSet { ranges })
    }
}

/// At most 80 characters of a value, for error messages.
pub(crate) fn excerpt(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= 80 {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(77).collect();
        out.push_str("...");
        out
    }
}

/// Parses `text` as XML with root element `dds`, mapping errors to [`AccessError::Xml`].
pub(crate) fn parse_dds<'input>(
    text: &'input str,
    file: &str,
) -> Result<Document<'input>, AccessError> {
    let doc = Document::parse(text).map_err(|e| AccessError::Xml {
        file: file.to_owned(),
        reason: e.to_string(),
    })?;
    let root = doc.root_element();
    if root.tag_name().name() != "dds" {
        return Err(AccessError::UnexpectedElement {
            file: file.to_owned(),
            line: doc.text_pos_at(root.range().start).row,
            element: root.tag_name().name().to_owned(),
            parent: "(document)".to_owned(),
            allowed: "dds".to_owned(),
        });
    }
    Ok(doc)
}
