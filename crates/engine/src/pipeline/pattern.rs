//! Loki's pattern language (`<name>` captures, `<_>` unnamed, literal text):
//! the `| pattern` parser and the `|>` / `!>` line filters.

#[derive(Clone, Debug)]
enum Node {
    Lit(String),
    Capture(Option<String>),
}

/// A compiled pattern.
#[derive(Clone, Debug)]
pub struct Pattern {
    nodes: Vec<Node>,
    names: Vec<String>,
}

fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f == '_' || f.is_ascii_alphabetic())
        && c.all(|x| x == '_' || x.is_ascii_alphanumeric())
}

impl Pattern {
    /// Parses a pattern; errors use Loki's wording.
    pub fn new(src: &str) -> Result<Self, String> {
        let mut nodes: Vec<Node> = Vec::new();
        let mut rest = src;
        let mut lit = String::new();
        while !rest.is_empty() {
            if rest.starts_with('<') {
                if let Some(end) = rest.find('>') {
                    let name = &rest[1..end];
                    if is_name(name) {
                        if !lit.is_empty() {
                            nodes.push(Node::Lit(std::mem::take(&mut lit)));
                        }
                        if matches!(nodes.last(), Some(Node::Capture(_))) {
                            return Err("found consecutive capture".to_string());
                        }
                        nodes.push(Node::Capture(if name == "_" {
                            None
                        } else {
                            Some(name.to_string())
                        }));
                        rest = &rest[end + 1..];
                        continue;
                    }
                }
            }
            let c = rest.chars().next().unwrap_or_default();
            lit.push(c);
            rest = &rest[c.len_utf8()..];
        }
        if !lit.is_empty() {
            nodes.push(Node::Lit(lit));
        }
        let mut names = Vec::new();
        for n in &nodes {
            if let Node::Capture(Some(name)) = n {
                if names.contains(name) {
                    return Err(format!("duplicate capture name ({name})"));
                }
                names.push(name.clone());
            }
        }
        Ok(Pattern { nodes, names })
    }

    /// Names of the named captures, in order.
    pub fn names(&self) -> &[String] {
        &self.names
    }

    /// True when the pattern has at least one capture (named or not).
    pub fn has_capture(&self) -> bool {
        self.nodes.iter().any(|n| matches!(n, Node::Capture(_)))
    }

    /// Extracts the named captures from `line`, in order; may stop early.
    pub fn matches<'a>(&self, line: &'a str) -> Vec<&'a str> {
        let mut out = Vec::new();
        if line.is_empty() || self.nodes.is_empty() {
            return out;
        }
        let mut nodes = &self.nodes[..];
        let mut input = line;
        if let Node::Lit(l) = &nodes[0] {
            if !input.starts_with(l.as_str()) {
                return out;
            }
            input = &input[l.len()..];
            nodes = &nodes[1..];
        }
        while !nodes.is_empty() {
            let Node::Capture(name) = &nodes[0] else {
                return out;
            };
            if nodes.len() == 1 {
                if name.is_some() {
                    out.push(input);
                }
                return out;
            }
            let Node::Lit(l) = &nodes[1] else { return out };
            nodes = &nodes[2..];
            match input.find(l.as_str()) {
                None => {
                    if name.is_some() {
                        out.push(input);
                    }
                    return out;
                }
                Some(i) => {
                    if name.is_some() {
                        out.push(&input[..i]);
                    }
                    input = &input[i + l.len()..];
                }
            }
        }
        out
    }

    /// The `|>` test: every literal found in order, captures non-empty.
    pub fn test(&self, line: &str) -> bool {
        if line.is_empty() || self.nodes.is_empty() {
            return line.is_empty() && self.nodes.is_empty();
        }
        let mut off = 0;
        for (i, n) in self.nodes.iter().enumerate() {
            let Node::Lit(l) = n else { continue };
            match line[off..].find(l.as_str()) {
                None => return false,
                Some(j) => {
                    if i != 0 && j == 0 {
                        return false;
                    }
                    off += j + l.len();
                }
            }
        }
        let req_rem = matches!(self.nodes.last(), Some(Node::Capture(_)));
        req_rem == (off != line.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extract_and_test() {
        let p = Pattern::new("<ip> - <_> [<ts>] \"<method> <_>").unwrap();
        assert_eq!(p.names(), ["ip", "ts", "method"]);
        let m = p.matches("1.2.3.4 - - [now] \"GET /x HTTP/1.1\"");
        assert_eq!(m, ["1.2.3.4", "now", "GET"]);
        let f = Pattern::new("<_> bar").unwrap();
        assert!(!f.test("foo bar baz"));
        assert!(Pattern::new("<_> baz").unwrap().test("foo bar baz"));
        assert!(Pattern::new("foo <_>").unwrap().test("foo bar baz"));
        assert!(Pattern::new("<a><b>").is_err());
    }
}
