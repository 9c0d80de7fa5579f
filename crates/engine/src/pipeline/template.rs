//! A Go `text/template` subset for `line_format` and `label_format`: text,
//! `{{ pipeline }}` actions with fields (`.label`), literals, parenthesized
//! pipelines, `if/else if/else/end`, trim markers, and Loki's function set.
//! Errors follow Go's texts (`template: line:1:11: executing "line" at <f>: …`).
//!
//! Other users of Go templates (the ruler's alert labels and annotations,
//! Prometheus style) widen the language with a [`Dialect`]: variables
//! (`$labels.x`, `$value`), field paths (`.Labels.x`) and functions of their
//! own, which their [`Context`] answers.

use super::convert::{format_float_v, parse_float};
use super::{builtins, funcs};

/// A runtime value.
#[derive(Clone, Debug, PartialEq)]
pub enum Val {
    /// A string.
    Str(String),
    /// An integer (Go `int`/`int64`).
    Int(i64),
    /// A float (Go `float64`).
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// A time, nanoseconds since the epoch (UTC); wide enough for Go's
    /// zero time (year 1) and any year a layout reads.
    Time(i128),
    /// A list (a JSON array from `fromJson`).
    List(Vec<Val>),
    /// A map with string keys (a JSON object from `fromJson`).
    Map(std::collections::BTreeMap<String, Val>),
    /// No value.
    Nil,
}

impl Val {
    /// Go's type name, for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Val::Str(_) => "string",
            Val::Int(_) => "int",
            Val::Float(_) => "float64",
            Val::Bool(_) => "bool",
            Val::Time(_) => "time.Time",
            Val::List(_) => "[]interface {}",
            Val::Map(_) => "map[string]interface {}",
            Val::Nil => "<nil>",
        }
    }

    /// The value `fromJson` gives for a decoded JSON value (numbers are
    /// floats, as Go decodes them).
    pub fn from_json(v: serde_json::Value) -> Val {
        use serde_json::Value as J;
        match v {
            J::Null => Val::Nil,
            J::Bool(b) => Val::Bool(b),
            J::Number(n) => Val::Float(n.as_f64().unwrap_or(0.0)),
            J::String(s) => Val::Str(s),
            J::Array(a) => Val::List(a.into_iter().map(Val::from_json).collect()),
            J::Object(o) => Val::Map(o.into_iter().map(|(k, v)| (k, Val::from_json(v))).collect()),
        }
    }

    /// Go's `%v` of the value inside a list, a map or `fmt.Sprint`: as
    /// [`Val::print`], but nothing is `<nil>`.
    pub fn to_text_nested(&self) -> String {
        match self {
            Val::Nil => "<nil>".into(),
            other => other.to_text(),
        }
    }

    /// Go's `%v` / template printing.
    pub fn print(&self, out: &mut String) {
        match self {
            Val::Str(s) => out.push_str(s),
            Val::Int(i) => out.push_str(&i.to_string()),
            Val::Float(f) => out.push_str(&format_float_v(*f)),
            Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            Val::Time(t) => out.push_str(&funcs::format_time(
                *t,
                "2006-01-02 15:04:05.999999999 -0700 MST",
            )),
            Val::List(items) => {
                out.push('[');
                for (i, v) in items.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(&v.to_text_nested());
                }
                out.push(']');
            }
            Val::Map(m) => {
                out.push_str("map[");
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        out.push(' ');
                    }
                    out.push_str(k);
                    out.push(':');
                    out.push_str(&v.to_text_nested());
                }
                out.push(']');
            }
            Val::Nil => out.push_str("<no value>"),
        }
    }

    /// Go template truthiness.
    pub fn truthy(&self) -> bool {
        match self {
            Val::Str(s) => !s.is_empty(),
            Val::Int(i) => *i != 0,
            Val::Float(f) => *f != 0.0,
            Val::Bool(b) => *b,
            Val::Time(_) => true,
            Val::List(l) => !l.is_empty(),
            Val::Map(m) => !m.is_empty(),
            Val::Nil => false,
        }
    }

    /// Text of the value.
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        self.print(&mut s);
        s
    }
}

/// What a template may use beyond LogQL's `line_format` language. The
/// default is LogQL's: no variables, no field paths, no extra functions.
#[derive(Clone, Copy, Debug, Default)]
pub struct Dialect {
    /// Variables (`$name`, `$name.key`) a template may read; their values
    /// come from [`Context::variable`]. Any other variable is refused at parse
    /// time with Go's `undefined variable` message.
    pub variables: &'static [&'static str],
    /// Functions besides LogQL's ([`funcs::exists`]); they run through
    /// [`Context::call_extra`].
    pub functions: &'static [&'static str],
    /// Whether `.a.b` reads a path ([`Context::value_at`]); LogQL refuses it.
    pub field_paths: bool,
}

#[derive(Clone, Debug)]
enum Arg {
    Field(Vec<String>),
    Var(String, Vec<String>),
    ExtFunc(String),
    Str(String),
    Int(i64),
    Float(f64),
    Bool(bool),
    Nil,
    Dot,
    Func(String),
    Pipe(Pipe),
}

#[derive(Clone, Debug)]
struct ArgNode {
    arg: Arg,
    pos: usize,
    text: String,
}

#[derive(Clone, Debug)]
struct Cmd {
    args: Vec<ArgNode>,
}

#[derive(Clone, Debug)]
struct Pipe {
    cmds: Vec<Cmd>,
}

enum Term {
    End,
    Else,
    ElseIf(Pipe),
}

#[derive(Clone, Debug)]
enum Node {
    Text(String),
    Action(Pipe),
    If(Vec<(Pipe, Vec<Node>)>, Vec<Node>),
}

/// What a template reads while running.
pub trait Context {
    /// A label's value (`.name`).
    fn field(&self, name: &str) -> Option<&str>;
    /// The current line (`__line__`).
    fn line(&self) -> &str;
    /// The entry's timestamp in nanoseconds (`__timestamp__`).
    fn timestamp(&self) -> i64;
    /// The value of a field path (`.name`, or `.a.b` under a [`Dialect`]
    /// with field paths): by default the label `name`'s text, empty when
    /// absent, as LogQL reads it.
    fn value_at(&self, path: &[String]) -> Val {
        match path {
            [one] => Val::Str(self.field(one).unwrap_or("").to_string()),
            _ => Val::Nil,
        }
    }
    /// A variable of the [`Dialect`] (`$name`); a map value is indexed by
    /// the keys after it (`$labels.job`).
    fn variable(&self, _name: &str) -> Val {
        Val::Nil
    }
    /// Runs a function of the [`Dialect`]; an error is Go's text after
    /// `error calling NAME:`.
    fn call_extra(&self, name: &str, _args: Vec<Val>) -> Result<Val, String> {
        Err(format!("function {name:?} not defined"))
    }
}

/// A parsed template.
#[derive(Clone, Debug)]
pub struct Template {
    name: String,
    nodes: Vec<Node>,
}

/// Deepest nesting of `if` blocks, `else if` chains and parenthesised
/// pipelines a template may have. Go allows 10,000 on its growable stacks;
/// parsing and executing here recurse on a fixed 2 MiB thread stack, and no
/// real `line_format` template comes near 100.
const MAX_DEPTH: usize = 100;

struct Parser<'a> {
    src: &'a str,
    name: &'a str,
    dialect: &'a Dialect,
    pos: usize,
    /// `if` bodies and `else if` branches being parsed.
    depth: usize,
}

#[derive(Debug, PartialEq)]
enum Tok {
    Word(String),
    Str(String),
    Num(String),
    Field(Vec<String>),
    Var(String, Vec<String>),
    Pipe,
    LParen,
    RParen,
    Dot,
}

impl Template {
    /// Parses `src`; `name` is Go's template name (`line` or `label`).
    pub fn parse(name: &str, src: &str) -> Result<Template, String> {
        Template::parse_with(name, src, &Dialect::default())
    }

    /// Parses `src` in a wider language than LogQL's ([`Dialect`]).
    pub fn parse_with(name: &str, src: &str, dialect: &Dialect) -> Result<Template, String> {
        let mut p = Parser {
            src,
            name,
            dialect,
            pos: 0,
            depth: 0,
        };
        let (nodes, term) = p.parse_list()?;
        if let Some(t) = term {
            let t = match t {
                Term::End => "end",
                _ => "else",
            };
            return Err(format!(
                "template: {name}:{}: unexpected {{{{{t}}}}}",
                p.line_no()
            ));
        }
        Ok(Template {
            name: name.to_string(),
            nodes,
        })
    }

    /// Runs the template.
    pub fn execute(&self, ctx: &dyn Context) -> Result<String, String> {
        let mut out = String::new();
        let ex = Exec {
            ctx,
            name: &self.name,
        };
        ex.nodes(&self.nodes, &mut out)?;
        Ok(out)
    }
}

impl<'a> Parser<'a> {
    fn line_no(&self) -> usize {
        1 + self.src[..self.pos.min(self.src.len())]
            .matches('\n')
            .count()
    }

    fn err(&self, msg: &str) -> String {
        format!("template: {}:{}: {msg}", self.name, self.line_no())
    }

    /// One more level of nesting, refused past [`MAX_DEPTH`] with Go's message.
    fn enter(&mut self) -> Result<(), String> {
        if self.depth >= MAX_DEPTH {
            return Err(self.err("max expression depth exceeded"));
        }
        self.depth += 1;
        Ok(())
    }

    /// Parses nodes until EOF or a terminator keyword (`else…`, `end`), returned.
    fn parse_list(&mut self) -> Result<(Vec<Node>, Option<Term>), String> {
        self.enter()?;
        let r = self.parse_list_inner();
        self.depth -= 1;
        r
    }

    fn parse_list_inner(&mut self) -> Result<(Vec<Node>, Option<Term>), String> {
        let mut nodes = Vec::new();
        loop {
            let rest = &self.src[self.pos..];
            let Some(open) = rest.find("{{") else {
                if !rest.is_empty() {
                    nodes.push(Node::Text(rest.to_string()));
                }
                self.pos = self.src.len();
                return Ok((nodes, None));
            };
            let mut text = &rest[..open];
            let mut inner_start = self.pos + open + 2;
            if self.src[inner_start..].starts_with("- ")
                || self.src[inner_start..].starts_with("-\t")
                || self.src[inner_start..].starts_with("-\n")
            {
                text = text.trim_end();
                inner_start += 1;
            }
            if !text.is_empty() {
                nodes.push(Node::Text(text.to_string()));
            }
            self.pos = inner_start;
            let Some(close_rel) = self.find_close() else {
                return Err(self.err("unclosed action"));
            };
            let mut inner_end = close_rel;
            let mut after = close_rel + 2;
            let trim_right = inner_end > inner_start
                && self.src[..inner_end].ends_with('-')
                && self.src[..inner_end - 1].ends_with([' ', '\t', '\n']);
            if trim_right {
                inner_end -= 1;
            }
            let inner = &self.src[inner_start..inner_end];
            let t = inner.trim();
            if t.starts_with("/*") {
                self.pos = after;
            } else {
                let toks = self.lex(inner_start, inner_end)?;
                self.pos = after;
                match toks.first() {
                    Some((Tok::Word(w), _)) if w == "end" => {
                        self.skip_trim(trim_right, &mut after);
                        return Ok((nodes, Some(Term::End)));
                    }
                    Some((Tok::Word(w), _)) if w == "else" => {
                        self.skip_trim(trim_right, &mut after);
                        if toks.len() > 2 && matches!(&toks[1].0, Tok::Word(x) if x == "if") {
                            let cond = self.parse_pipe(&toks[2..])?;
                            return Ok((nodes, Some(Term::ElseIf(cond))));
                        }
                        return Ok((nodes, Some(Term::Else)));
                    }
                    Some((Tok::Word(w), _)) if w == "if" => {
                        self.skip_trim(trim_right, &mut after);
                        let cond = self.parse_pipe(&toks[1..])?;
                        let (body, term) = self.parse_list()?;
                        let els = self.finish_if(term)?;
                        nodes.push(Node::If(vec![(cond, body)], els));
                        continue;
                    }
                    Some((Tok::Word(w), _))
                        if matches!(
                            w.as_str(),
                            "range" | "with" | "define" | "template" | "block"
                        ) =>
                    {
                        return Err(self.err(&format!("unsupported action {w:?}")));
                    }
                    _ => {
                        let pipe = self.parse_pipe(&toks)?;
                        nodes.push(Node::Action(pipe));
                    }
                }
            }
            self.skip_trim(trim_right, &mut after);
        }
    }

    fn skip_trim(&mut self, trim_right: bool, after: &mut usize) {
        if trim_right {
            let rest = &self.src[*after..];
            *after += rest.len() - rest.trim_start().len();
        }
        self.pos = *after;
    }

    /// After an if body: handles `else`, `else if`, `end`. Each `else if`
    /// nests one more `if` node, so it counts as a level.
    fn finish_if(&mut self, term: Option<Term>) -> Result<Vec<Node>, String> {
        self.enter()?;
        let r = self.finish_if_inner(term);
        self.depth -= 1;
        r
    }

    fn finish_if_inner(&mut self, term: Option<Term>) -> Result<Vec<Node>, String> {
        match term {
            Some(Term::End) => Ok(Vec::new()),
            Some(Term::Else) => {
                let (els, term) = self.parse_list()?;
                if !matches!(term, Some(Term::End)) {
                    return Err(self.err("unexpected EOF"));
                }
                Ok(els)
            }
            Some(Term::ElseIf(cond)) => {
                let (body, term) = self.parse_list()?;
                let els = self.finish_if(term)?;
                Ok(vec![Node::If(vec![(cond, body)], els)])
            }
            None => Err(self.err("unexpected EOF")),
        }
    }

    fn find_close(&self) -> Option<usize> {
        let b = self.src.as_bytes();
        let mut i = self.pos;
        while i + 1 < b.len() {
            match b[i] {
                b'"' => {
                    i += 1;
                    while i < b.len() && b[i] != b'"' {
                        if b[i] == b'\\' {
                            i += 1;
                        }
                        i += 1;
                    }
                }
                b'`' => {
                    i += 1;
                    while i < b.len() && b[i] != b'`' {
                        i += 1;
                    }
                }
                b'}' if b[i + 1] == b'}' => return Some(i),
                _ => {}
            }
            i += 1;
        }
        None
    }

    fn lex(&self, start: usize, end: usize) -> Result<Vec<(Tok, usize)>, String> {
        let s = &self.src[..end];
        let b = s.as_bytes();
        let mut i = start;
        let mut out = Vec::new();
        while i < end {
            let c = b[i];
            match c {
                b' ' | b'\t' | b'\n' | b'\r' => i += 1,
                b'|' => {
                    out.push((Tok::Pipe, i));
                    i += 1;
                }
                b'(' => {
                    out.push((Tok::LParen, i));
                    i += 1;
                }
                b')' => {
                    out.push((Tok::RParen, i));
                    i += 1;
                }
                b'"' | b'`' => {
                    let (v, used) = runakefli_model::labels::unquote_go(&s[i..])
                        .ok_or_else(|| self.err("unterminated quoted string"))?;
                    out.push((Tok::Str(v), i));
                    i += used;
                }
                b'.' => {
                    let st = i;
                    // LogQL reads `.a.b` as two operands (and refuses it
                    // when run); a dialect with field paths as one path.
                    let limit = if self.dialect.field_paths {
                        usize::MAX
                    } else {
                        1
                    };
                    let path = self.lex_path(b, &mut i, end, limit);
                    if path.is_empty() {
                        i = st + 1;
                        out.push((Tok::Dot, st));
                    } else {
                        out.push((Tok::Field(path), st));
                    }
                }
                b'$' => {
                    let st = i;
                    i += 1;
                    while i < end && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                        i += 1;
                    }
                    let name = s[st + 1..i].to_string();
                    if !self.dialect.variables.contains(&name.as_str()) {
                        return Err(self.err(&format!("undefined variable \"${name}\"")));
                    }
                    let path = self.lex_path(b, &mut i, end, usize::MAX);
                    out.push((Tok::Var(name, path), st));
                }
                b'0'..=b'9' | b'-' | b'+' => {
                    let st = i;
                    i += 1;
                    while i < end
                        && (b[i].is_ascii_alphanumeric()
                            || b[i] == b'.'
                            || ((b[i] == b'-' || b[i] == b'+') && matches!(b[i - 1], b'e' | b'E')))
                    {
                        i += 1;
                    }
                    out.push((Tok::Num(s[st..i].to_string()), st));
                }
                c if c.is_ascii_alphabetic() || c == b'_' => {
                    let st = i;
                    while i < end && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                        i += 1;
                    }
                    out.push((Tok::Word(s[st..i].to_string()), st));
                }
                _ => {
                    let ch = s[i..].chars().next().unwrap_or('?');
                    return Err(self.err(&format!("unexpected {ch:?} in command")));
                }
            }
        }
        Ok(out)
    }

    /// Reads `.a.b…` from `i` (at a dot), at most `limit` names: the
    /// names, empty for a lone dot.
    fn lex_path(&self, b: &[u8], i: &mut usize, end: usize, limit: usize) -> Vec<String> {
        let mut path = Vec::new();
        while *i < end && b[*i] == b'.' && path.len() < limit {
            let st = *i + 1;
            let mut j = st;
            while j < end && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            if j == st {
                break;
            }
            path.push(String::from_utf8_lossy(&b[st..j]).into_owned());
            *i = j;
        }
        path
    }

    fn parse_pipe(&self, toks: &[(Tok, usize)]) -> Result<Pipe, String> {
        let mut i = 0;
        let p = self.pipe_inner(toks, &mut i, self.depth)?;
        if i != toks.len() {
            return Err(self.err("unexpected \")\" in operand"));
        }
        Ok(p)
    }

    /// A pipeline up to a closing parenthesis; `depth` counts the enclosing
    /// levels (blocks and parentheses).
    fn pipe_inner(
        &self,
        toks: &[(Tok, usize)],
        i: &mut usize,
        depth: usize,
    ) -> Result<Pipe, String> {
        if depth >= MAX_DEPTH {
            return Err(self.err("max expression depth exceeded"));
        }
        let mut cmds = Vec::new();
        let mut args: Vec<ArgNode> = Vec::new();
        while *i < toks.len() {
            let (t, pos) = &toks[*i];
            *i += 1;
            let text = match t {
                Tok::Word(w) | Tok::Num(w) => w.clone(),
                Tok::Field(f) => format!(".{}", f.join(".")),
                Tok::Var(v, path) => std::iter::once(format!("${v}"))
                    .chain(path.iter().cloned())
                    .collect::<Vec<_>>()
                    .join("."),
                Tok::Str(s) => runakefli_model::labels::quote_go(s),
                _ => String::new(),
            };
            let arg = match t {
                Tok::Pipe => {
                    if args.is_empty() {
                        return Err(self.err("missing command"));
                    }
                    cmds.push(Cmd {
                        args: std::mem::take(&mut args),
                    });
                    continue;
                }
                Tok::RParen => {
                    *i -= 1;
                    break;
                }
                Tok::LParen => {
                    let inner = self.pipe_inner(toks, i, depth + 1)?;
                    if !matches!(toks.get(*i), Some((Tok::RParen, _))) {
                        return Err(self.err("unclosed left paren"));
                    }
                    *i += 1;
                    Arg::Pipe(inner)
                }
                Tok::Dot => Arg::Dot,
                Tok::Field(f) => Arg::Field(f.clone()),
                Tok::Var(v, path) => Arg::Var(v.clone(), path.clone()),
                Tok::Str(s) => Arg::Str(s.clone()),
                Tok::Num(n) => {
                    if let Ok(v) = n.parse::<i64>() {
                        Arg::Int(v)
                    } else if let Ok(v) = parse_float(n) {
                        Arg::Float(v)
                    } else {
                        return Err(self.err(&format!("bad number syntax: {n:?}")));
                    }
                }
                Tok::Word(w) => match w.as_str() {
                    "true" => Arg::Bool(true),
                    "false" => Arg::Bool(false),
                    "nil" => Arg::Nil,
                    _ => {
                        if self.dialect.functions.contains(&w.as_str()) {
                            Arg::ExtFunc(w.clone())
                        } else if funcs::exists(w) {
                            Arg::Func(w.clone())
                        } else {
                            return Err(self.err(&format!("function {w:?} not defined")));
                        }
                    }
                },
            };
            args.push(ArgNode {
                arg,
                pos: *pos,
                text,
            });
        }
        if args.is_empty() {
            if cmds.is_empty() {
                return Err(self.err("missing value for command"));
            }
            return Err(self.err("missing command"));
        }
        cmds.push(Cmd { args });
        Ok(Pipe { cmds })
    }
}

struct Exec<'a> {
    ctx: &'a dyn Context,
    name: &'a str,
}

impl Exec<'_> {
    fn nodes(&self, nodes: &[Node], out: &mut String) -> Result<(), String> {
        for n in nodes {
            match n {
                Node::Text(t) => out.push_str(t),
                Node::Action(p) => self.pipe(p)?.print(out),
                Node::If(branches, els) => {
                    let mut done = false;
                    for (cond, body) in branches {
                        if self.pipe(cond)?.truthy() {
                            self.nodes(body, out)?;
                            done = true;
                            break;
                        }
                    }
                    if !done {
                        self.nodes(els, out)?;
                    }
                }
            }
        }
        Ok(())
    }

    fn err_at(&self, node: &ArgNode, msg: &str) -> String {
        format!(
            "template: {}:1:{}: executing \"{}\" at <{}>: {msg}",
            self.name, node.pos, self.name, node.text
        )
    }

    fn pipe(&self, p: &Pipe) -> Result<Val, String> {
        let mut prev: Option<Val> = None;
        for c in &p.cmds {
            prev = Some(self.cmd(c, prev)?);
        }
        Ok(prev.unwrap_or(Val::Nil))
    }

    fn arg(&self, a: &ArgNode) -> Result<Val, String> {
        Ok(match &a.arg {
            Arg::Field(path) => self.ctx.value_at(path),
            Arg::Var(name, path) => {
                let mut v = self.ctx.variable(name);
                for key in path {
                    v = match v {
                        Val::Map(mut m) => m.remove(key).unwrap_or(Val::Nil),
                        other => {
                            return Err(self.err_at(
                                a,
                                &format!(
                                    "can't evaluate field {key} in type {}",
                                    other.type_name()
                                ),
                            ))
                        }
                    };
                }
                v
            }
            Arg::ExtFunc(name) => self.call_ext(a, name, Vec::new())?,
            Arg::Str(s) => Val::Str(s.clone()),
            Arg::Int(i) => Val::Int(*i),
            Arg::Float(f) => Val::Float(*f),
            Arg::Bool(b) => Val::Bool(*b),
            Arg::Nil => Val::Nil,
            Arg::Dot => Val::Nil,
            Arg::Pipe(p) => self.pipe(p)?,
            Arg::Func(name) => self.call(a, name, Vec::new(), &[])?,
        })
    }

    fn cmd(&self, c: &Cmd, piped: Option<Val>) -> Result<Val, String> {
        let first = &c.args[0];
        if let Arg::Func(name) = &first.arg {
            let mut vals = Vec::with_capacity(c.args.len());
            for a in &c.args[1..] {
                vals.push(self.arg(a)?);
            }
            if let Some(p) = piped {
                vals.push(p);
            }
            return self.call(first, name, vals, &c.args[1..]);
        }
        if let Arg::ExtFunc(name) = &first.arg {
            let mut vals = Vec::with_capacity(c.args.len());
            for a in &c.args[1..] {
                vals.push(self.arg(a)?);
            }
            if let Some(p) = piped {
                vals.push(p);
            }
            return self.call_ext(first, name, vals);
        }
        if c.args.len() > 1 || piped.is_some() {
            return Err(self.err_at(
                first,
                &format!("can't give argument to non-function {}", first.text),
            ));
        }
        self.arg(first)
    }

    fn call_ext(&self, node: &ArgNode, name: &str, args: Vec<Val>) -> Result<Val, String> {
        self.ctx
            .call_extra(name, args)
            .map_err(|msg| self.err_at(node, &format!("error calling {name}: {msg}")))
    }

    fn call(
        &self,
        node: &ArgNode,
        name: &str,
        args: Vec<Val>,
        arg_nodes: &[ArgNode],
    ) -> Result<Val, String> {
        match name {
            "__line__" => return Ok(Val::Str(self.ctx.line().to_string())),
            "__timestamp__" => return Ok(Val::Time(i128::from(self.ctx.timestamp()))),
            // Go hands `call` the text of its first argument for the error.
            // (a piped value's own text when it is the only argument).
            "call" => {
                let Some(first) = args.first() else {
                    return Err(
                        self.err_at(node, "wrong number of args for call: want at least 1 got 0")
                    );
                };
                let text = match arg_nodes.first() {
                    Some(n) => n.text.clone(),
                    None => first.to_text_nested(),
                };
                let msg = builtins::call(Some(first), &text);
                return Err(self.err_at(node, &format!("error calling call: {msg}")));
            }
            _ => {}
        }
        funcs::call(name, args).map_err(|e| match e {
            funcs::CallError::Type { index, msg } => {
                // Go reports a bad argument at the node of the last explicit argument.
                let at = arg_nodes.get(index).or(arg_nodes.last()).unwrap_or(node);
                self.err_at(at, &msg)
            }
            funcs::CallError::Failed(msg) => {
                self.err_at(node, &format!("error calling {name}: {msg}"))
            }
            funcs::CallError::Arity(want, got) => self.err_at(
                node,
                &format!("wrong number of args for {name}: want {want} got {got}"),
            ),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Ctx;
    impl Context for Ctx {
        fn field(&self, name: &str) -> Option<&str> {
            match name {
                "level" => Some("info"),
                "msg" => Some("  hello world "),
                "n" => Some("9.5"),
                _ => None,
            }
        }
        fn line(&self) -> &str {
            "the line"
        }
        fn timestamp(&self) -> i64 {
            1_795_913_998_050_126_112
        }
    }

    fn run(src: &str) -> Result<String, String> {
        Template::parse("line", src)?.execute(&Ctx)
    }

    /// One template per function the LogQL parser accepts
    /// ([`runakefli_logql::template::TEMPLATE_FUNCTIONS`]).
    const SAMPLES: &[(&str, &str)] = &[
        ("and", "{{ and 1 2 }}"),
        ("call", "{{ call .level }}"),
        ("html", r#"{{ html "<a>" }}"#),
        ("index", "{{ index .level 0 }}"),
        ("slice", "{{ slice .level 1 3 }}"),
        ("js", r#"{{ js "a'b" }}"#),
        ("len", "{{ len .level }}"),
        ("not", "{{ not true }}"),
        ("or", "{{ or 0 1 }}"),
        ("print", "{{ print 1 }}"),
        ("printf", r#"{{ printf "%s" .level }}"#),
        ("println", "{{ println 1 }}"),
        ("urlquery", r#"{{ urlquery "a b" }}"#),
        ("eq", "{{ eq 1 1 }}"),
        ("ge", "{{ ge 1 1 }}"),
        ("gt", "{{ gt 1 1 }}"),
        ("le", "{{ le 1 1 }}"),
        ("lt", "{{ lt 1 1 }}"),
        ("ne", "{{ ne 1 1 }}"),
        ("lower", r#"{{ lower "A" }}"#),
        ("upper", r#"{{ upper "a" }}"#),
        ("title", r#"{{ title "a b" }}"#),
        ("trunc", r#"{{ trunc 2 "abc" }}"#),
        ("substr", r#"{{ substr 0 2 "abc" }}"#),
        ("contains", r#"{{ contains "a" "abc" }}"#),
        ("hasPrefix", r#"{{ hasPrefix "a" "abc" }}"#),
        ("hasSuffix", r#"{{ hasSuffix "c" "abc" }}"#),
        ("indent", r#"{{ indent 2 "a" }}"#),
        ("nindent", r#"{{ nindent 2 "a" }}"#),
        ("replace", r#"{{ replace "a" "b" "aa" }}"#),
        ("repeat", r#"{{ repeat 2 "a" }}"#),
        ("trim", r#"{{ trim " a " }}"#),
        ("trimAll", r#"{{ trimAll "x" "xax" }}"#),
        ("trimSuffix", r#"{{ trimSuffix "x" "ax" }}"#),
        ("trimPrefix", r#"{{ trimPrefix "x" "xa" }}"#),
        ("int", r#"{{ int "3" }}"#),
        ("float64", r#"{{ float64 "3.5" }}"#),
        ("add", "{{ add 1 2 }}"),
        ("sub", "{{ sub 3 2 }}"),
        ("mul", "{{ mul 2 3 }}"),
        ("div", "{{ div 6 3 }}"),
        ("mod", "{{ mod 7 3 }}"),
        ("addf", "{{ addf 1.5 2 }}"),
        ("subf", "{{ subf 1.5 2 }}"),
        ("mulf", "{{ mulf 1.5 2 }}"),
        ("divf", "{{ divf 3 2 }}"),
        ("max", "{{ max 1 2 }}"),
        ("min", "{{ min 1 2 }}"),
        ("maxf", "{{ maxf 1.5 2 }}"),
        ("minf", "{{ minf 1.5 2 }}"),
        ("ceil", "{{ ceil 1.5 }}"),
        ("floor", "{{ floor 1.5 }}"),
        ("round", "{{ round 1.55 1 }}"),
        ("fromJson", r#"{{ fromJson `{"a":[1,"x"]}` }}"#),
        ("date", r#"{{ date "2006-01-02" __timestamp__ }}"#),
        (
            "toDate",
            r#"{{ toDate "2006-01-02" "2021-11-02" | unixEpoch }}"#,
        ),
        ("now", "{{ now | unixEpoch | len }}"),
        ("unixEpoch", "{{ unixEpoch __timestamp__ }}"),
        ("default", r#"{{ default "x" .missing }}"#),
        ("ToLower", r#"{{ ToLower "A" }}"#),
        ("ToUpper", r#"{{ ToUpper "a" }}"#),
        ("Replace", r#"{{ Replace "aa" "a" "b" -1 }}"#),
        ("Trim", r#"{{ Trim "xax" "x" }}"#),
        ("TrimLeft", r#"{{ TrimLeft "xax" "x" }}"#),
        ("TrimRight", r#"{{ TrimRight "xax" "x" }}"#),
        ("TrimPrefix", r#"{{ TrimPrefix "xa" "x" }}"#),
        ("TrimSuffix", r#"{{ TrimSuffix "ax" "x" }}"#),
        ("TrimSpace", r#"{{ TrimSpace " a " }}"#),
        ("regexReplaceAll", r#"{{ regexReplaceAll "a" "aa" "b" }}"#),
        (
            "regexReplaceAllLiteral",
            r#"{{ regexReplaceAllLiteral "a" "aa" "$1" }}"#,
        ),
        ("count", r#"{{ count "a" "aa" }}"#),
        ("urldecode", r#"{{ urldecode "a%20b" }}"#),
        ("urlencode", r#"{{ urlencode "a b" }}"#),
        ("b64enc", r#"{{ b64enc "a" }}"#),
        ("b64dec", r#"{{ b64dec "YQ==" }}"#),
        ("bytes", r#"{{ bytes "1KB" }}"#),
        ("duration", r#"{{ duration "1s" }}"#),
        ("duration_seconds", r#"{{ duration_seconds "1m" }}"#),
        ("unixEpochMillis", "{{ unixEpochMillis __timestamp__ }}"),
        ("unixEpochNanos", "{{ unixEpochNanos __timestamp__ }}"),
        (
            "toDateInZone",
            r#"{{ toDateInZone "2006-01-02" "UTC" "2021-11-02" | unixEpoch }}"#,
        ),
        ("unixToTime", r#"{{ unixToTime "1700000000" | unixEpoch }}"#),
        ("alignLeft", r#"{{ alignLeft 3 "abcdef" }}"#),
        ("alignRight", r#"{{ alignRight 3 "abcdef" }}"#),
        ("__line__", "{{ __line__ }}"),
        ("__timestamp__", "{{ __timestamp__ | unixEpoch }}"),
    ];

    /// Every function the LogQL parser accepts runs here: a template
    /// calling it passes the parser's check and evaluates. Only `call`
    /// fails, as in Loki: no LogQL value is a function, and Go reports that
    /// when the template runs.
    #[test]
    fn logqls_language_has_no_variables_and_reads_one_field_name() {
        let e = Template::parse("line", "{{ $x }}").expect_err("no variables");
        assert_eq!(e, "template: line:1: undefined variable \"$x\"");
        // `.level.x` is two operands in LogQL, refused when run as before.
        let e = run("{{ .level.x }}").expect_err("two operands");
        assert!(
            e.contains("can't give argument to non-function .level"),
            "{e}"
        );
    }

    /// A caller's dialect: a variable, field paths and a function of its own.
    struct Wide;
    impl Context for Wide {
        fn field(&self, _: &str) -> Option<&str> {
            None
        }
        fn line(&self) -> &str {
            ""
        }
        fn timestamp(&self) -> i64 {
            0
        }
        fn value_at(&self, path: &[String]) -> Val {
            Val::Str(path.join("/"))
        }
        fn variable(&self, name: &str) -> Val {
            match name {
                "m" => Val::Map([("k".to_string(), Val::Int(7))].into()),
                _ => Val::Nil,
            }
        }
        fn call_extra(&self, name: &str, args: Vec<Val>) -> Result<Val, String> {
            match (name, args.as_slice()) {
                ("twice", [Val::Int(i)]) => Ok(Val::Int(2 * i)),
                _ => Err("bad argument".into()),
            }
        }
    }

    #[test]
    fn a_dialect_adds_variables_paths_and_functions() {
        const D: Dialect = Dialect {
            variables: &["m"],
            functions: &["twice"],
            field_paths: true,
        };
        let run = |src: &str| Template::parse_with("t", src, &D)?.execute(&Wide);
        assert_eq!(
            run("{{ $m.k }} {{ $m.k | twice }} {{ .A.b }}").expect("runs"),
            "7 14 A/b"
        );
        assert_eq!(run("{{ $m.none }}").expect("runs"), "<no value>");
        let e = run("{{ twice \"x\" }}").expect_err("fails");
        assert_eq!(
            e,
            "template: t:1:3: executing \"t\" at <twice>: error calling twice: bad argument"
        );
        let e = run("{{ $m.k.deeper }}").expect_err("not a map");
        assert!(e.contains("can't evaluate field deeper in type int"), "{e}");
    }

    #[test]
    fn every_function_the_parser_accepts_runs() {
        for name in runakefli_logql::template::TEMPLATE_FUNCTIONS {
            let Some((_, src)) = SAMPLES.iter().find(|(n, _)| n == name) else {
                panic!("no sample template for {name}");
            };
            assert!(src.contains(name), "the sample for {name} does not call it");
            runakefli_logql::template::check_template("line", src)
                .unwrap_or_else(|e| panic!("{name}: the parser refuses {src}: {e}"));
            let got = run(src);
            if *name == "call" {
                assert_eq!(
                    got,
                    Err("template: line:1:3: executing \"line\" at <call>: error calling call: non-function .level of type string".into())
                );
            } else {
                assert!(got.is_ok(), "{name}: {src} gives {got:?}");
            }
        }
        assert_eq!(
            SAMPLES.len(),
            runakefli_logql::template::TEMPLATE_FUNCTIONS.len()
        );
    }

    /// The Go builtins and Sprig/Loki functions the parser always accepted
    /// and the engine now runs, with Go's answers.
    #[test]
    fn go_builtins_json_and_dates() {
        let cases = [
            ("{{ index .level 0 }}", "105"),
            ("{{ slice .level 1 3 }}", "nf"),
            ("{{ slice .level 2 }}", "fo"),
            (r#"{{ js "a'b<" }}"#, r"a\'b\u003C"),
            (r#"{{ html "<a href='x'>" }}"#, "&lt;a href=&#39;x&#39;&gt;"),
            (r#"{{ urlquery "a b&c" }}"#, "a+b%26c"),
            (
                r#"{{ fromJson `{"a":[1,"x",null],"b":{"c":true}}` }}"#,
                "map[a:[1 x <nil>] b:map[c:true]]",
            ),
            (r#"{{ index (fromJson `{"a":[1,"x"]}`) "a" 1 }}"#, "x"),
            (r#"{{ len (fromJson `[1,2,3]`) }}"#, "3"),
            (r#"{{ fromJson "not json" }}"#, "<no value>"),
            (
                r#"{{ toDate "2006-01-02" "2021-11-02" | unixEpoch }}"#,
                "1635811200",
            ),
            (
                r#"{{ toDateInZone "2006-01-02T15:04:05.999999999Z" "UTC" "2023-03-10T01:32:40.340485723Z" | unixEpochMillis }}"#,
                "1678411960340",
            ),
            (
                r#"{{ toDateInZone "2006-01-02" "No/Such_Zone" "2021-11-02" | unixEpoch }}"#,
                "1635811200",
            ),
            // Not the layout: Go's zero time.
            (
                r#"{{ toDate "2006-01-02" "yesterday" | unixEpoch }}"#,
                "-62135596800",
            ),
            (
                r#"{{ toDate "2006-01-02" "yesterday" }}"#,
                "0001-01-01 00:00:00 +0000 UTC",
            ),
        ];
        for (src, want) in cases {
            assert_eq!(run(src).as_deref(), Ok(want), "{src}");
        }
        for (src, err) in [
            (
                "{{ index .level 9 }}",
                "error calling index: index out of range: 9",
            ),
            (
                "{{ slice .level 3 1 }}",
                "error calling slice: invalid slice index: 3 > 1",
            ),
            (
                "{{ call }}",
                "wrong number of args for call: want at least 1 got 0",
            ),
        ] {
            let got = run(src).unwrap_err();
            assert!(got.ends_with(err), "{src}: {got}");
        }
    }

    #[test]
    fn fields_pipes_and_funcs() {
        assert_eq!(
            run("{{.level}} {{ .msg | trim | ToUpper }}").unwrap(),
            "info HELLO WORLD"
        );
        assert_eq!(
            run("{{ .nope }}|{{ printf \"%s-%v\" .level .nope }}").unwrap(),
            "|info-"
        );
        assert_eq!(run("{{ __line__ | trunc 3 }}").unwrap(), "the");
        assert_eq!(
            run("{{ if eq .level \"info\" }}I{{ else }}O{{ end }}").unwrap(),
            "I"
        );
        assert_eq!(
            run("{{- if .nope -}} x {{- else if .level -}} y {{- end }}").unwrap(),
            "y"
        );
        assert_eq!(
            run("{{ __timestamp__ | date \"2006-01-02T15:04:05.000Z07:00\" }}").unwrap(),
            "2026-11-29T00:59:58.050Z"
        );
        assert_eq!(
            run("{{ ceil .n }} {{ floor .n }} {{ addf .n 0.5 }}").unwrap(),
            "10 9 10"
        );
    }

    #[test]
    fn errors_like_go() {
        assert_eq!(
            run("{{.foo").unwrap_err(),
            "template: line:1: unclosed action"
        );
        assert_eq!(
            run("{{ .msg | nosuchfunc }}").unwrap_err(),
            "template: line:1: function \"nosuchfunc\" not defined"
        );
        assert_eq!(
            run("{{ .n | float64 | round 0 }}").unwrap_err(),
            "template: line:1:24: executing \"line\" at <0>: wrong type for value; expected int; got float64"
        );
        assert_eq!(
            run("{{ .nope | bytes }}").unwrap_err(),
            "template: line:1:11: executing \"line\" at <bytes>: error calling bytes: strconv.ParseFloat: parsing \"\": invalid syntax"
        );
    }

    #[test]
    fn deep_nesting_is_refused_not_overflowed() {
        let parens = format!("{{{{ {}.n{} }}}}", "(".repeat(5000), ")".repeat(5000));
        let ifs = format!("{}x{}", "{{if .n}}".repeat(5000), "{{end}}".repeat(5000));
        let else_ifs = format!("{{{{if .n}}}}{}{{{{end}}}}", "{{else if .n}}".repeat(5000));
        for src in [parens, ifs, else_ifs] {
            let src2 = src.clone();
            let err = std::thread::Builder::new()
                .stack_size(2 << 20)
                .spawn(move || run(&src2).unwrap_err())
                .unwrap()
                .join()
                .unwrap();
            assert_eq!(err, "template: line:1: max expression depth exceeded");
        }
        // Moderate nesting still works.
        let ok = format!("{{{{ {}.n{} }}}}", "(".repeat(20), ")".repeat(20));
        assert_eq!(run(&ok).unwrap(), run("{{ .n }}").unwrap());
        let ok = format!("{}x{}", "{{if .n}}".repeat(20), "{{end}}".repeat(20));
        assert_eq!(run(&ok).unwrap(), "x");
    }
}
