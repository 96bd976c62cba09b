//! The analysis behind [`super::of_program`]: jaq's syntax tree walked backwards, from what is
//! read of a term's output to what it reads of its input, with the names in scope (variables
//! and what is read of them, definitions and where they were made, parameters bound to their
//! arguments).

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::OnceLock;

use jaq_core::load::lex::StrPart;
use jaq_core::load::parse::{BinaryOp, Def, Pattern, Term};
use jaq_core::path::Part as PathPart;

use super::Demand;

/// Terms the analysis may visit before it gives up (and the whole payload is read): following
/// definitions into their bodies and `reduce` to its fixed point multiply the work.
const STEP_BUDGET: usize = 200_000;

/// Definitions followed into one another at most this deep.
const MAX_INLINE_DEPTH: usize = 64;

/// How deep the analysis recurses at most (a term nests at most [`crate::expr::MAX_DEPTH`] deep;
/// the rest is definitions followed).
const MAX_RECURSION: usize = 400;

/// The definitions of the standard library written in jq, in the order jaq loads them.
fn prelude() -> &'static [Def<&'static str>] {
    static PRELUDE: OnceLock<Vec<Def<&'static str>>> = OnceLock::new();
    PRELUDE.get_or_init(|| {
        jaq_core::defs()
            .chain(jaq_std::defs())
            .chain(jaq_json::defs())
            .collect()
    })
}

/// What `term` reads of its input; `All` past the budget.
pub(super) fn reads(term: &Term<&str>) -> Demand {
    let prelude = prelude();
    let mut analysis = Analysis {
        prelude,
        steps: 0,
        active: Vec::new(),
        depth: 0,
    };
    let root = Env {
        list: None,
        prelude: prelude.len(),
    };
    analysis
        .term(term, Demand::All, &root)
        .unwrap_or(Demand::All)
}

/// The analysis went past [`STEP_BUDGET`] or [`MAX_INLINE_DEPTH`].
struct OutOfSteps;

type Step = Result<Demand, OutOfSteps>;

/// What a name means where it is used: a variable (and what is read of it), a definition (and
/// where it was made), or a filter parameter bound to its argument (and the caller's names, and
/// how many definitions were being followed where the call was made).
enum Bind<'t> {
    Var(&'t str, Rc<RefCell<Demand>>),
    Def(&'t Def<&'t str>, Env<'t>),
    Arg(&'t str, &'t Term<&'t str>, Env<'t>, usize),
}

/// The names in scope, innermost first, and how much of the prelude is visible (a prelude
/// definition sees those before it and itself).
#[derive(Clone)]
struct Env<'t> {
    list: Option<Rc<(Bind<'t>, Env<'t>)>>,
    prelude: usize,
}

impl<'t> Env<'t> {
    fn with(&self, bind: Bind<'t>) -> Env<'t> {
        Env {
            list: Some(Rc::new((bind, self.clone()))),
            prelude: self.prelude,
        }
    }

    fn var(&self, name: &str) -> Option<Rc<RefCell<Demand>>> {
        let mut env = self;
        while let Some(node) = &env.list {
            if let Bind::Var(x, cell) = &node.0
                && *x == name
            {
                return Some(cell.clone());
            }
            env = &node.1;
        }
        None
    }

    fn filter(&self, name: &str, arity: usize) -> Option<&Bind<'t>> {
        let mut env = self;
        while let Some(node) = &env.list {
            match &node.0 {
                Bind::Def(def, _) if def.name == name && def.args.len() == arity => {
                    return Some(&node.0);
                }
                Bind::Arg(x, _, _, _) if *x == name && arity == 0 => return Some(&node.0),
                _ => {}
            }
            env = &node.1;
        }
        None
    }
}

struct Analysis<'t> {
    prelude: &'t [Def<&'t str>],
    steps: usize,
    /// The definitions being followed, innermost last: one called again inside itself reads
    /// everything.
    active: Vec<*const Def<&'t str>>,
    /// How deep [`Analysis::term`] recurses: bounded, so that the analysis can not overflow
    /// the stack whatever the definitions call.
    depth: usize,
}

impl<'t> Analysis<'t> {
    /// What `t` reads of its input when `out` is read of each of its outputs.
    fn term(&mut self, t: &'t Term<&'t str>, out: Demand, env: &Env<'t>) -> Step {
        self.steps += 1;
        if self.steps > STEP_BUDGET || self.depth >= MAX_RECURSION {
            return Err(OutOfSteps);
        }
        self.depth += 1;
        let read = self.term_in(t, out, env);
        self.depth -= 1;
        read
    }

    fn term_in(&mut self, t: &'t Term<&'t str>, out: Demand, env: &Env<'t>) -> Step {
        Ok(match t {
            Term::Id => out,
            Term::Recurse => Demand::All,
            Term::Num(_) | Term::Break(_) | Term::Arr(None) => Demand::Nothing,
            Term::Str(fmt, parts) => self.string(*fmt, parts, env)?,
            Term::Arr(Some(f)) => self.term(f, out.items(), env)?,
            Term::Obj(entries) => self.object(entries, &out, env)?,
            Term::Neg(f) => self.term(f, Demand::All, env)?,
            Term::BinOp(l, op, r) => self.binary(l, op, r, out, env)?,
            Term::Label(_, f) => self.term(f, out, env)?,
            Term::Fold(_, xs, pattern, args) => self.fold(xs, pattern, args, out, env)?,
            Term::TryCatch(f, catch) => {
                let read = self.term(f, out.clone(), env)?;
                // The handler reads the error, never the input: an error carries a value only
                // from `error`, which reads its value whole.
                if let Some(catch) = catch {
                    self.term(catch, out, env)?;
                }
                read
            }
            Term::IfThenElse(branches, otherwise) => {
                let mut read = match otherwise {
                    Some(f) => self.term(f, out.clone(), env)?,
                    None => out.clone(),
                };
                for (cond, then) in branches {
                    read = read.union(self.term(cond, Demand::shape(), env)?);
                    read = read.union(self.term(then, out.clone(), env)?);
                }
                read
            }
            Term::Def(defs, body) => {
                let mut inner = env.clone();
                for def in defs {
                    let before = inner.clone();
                    inner = inner.with(Bind::Def(def, before));
                }
                self.term(body, out, &inner)?
            }
            Term::Call(name, args) => self.call(name, args, out, env)?,
            Term::Var(x) => {
                if let Some(cell) = env.var(x) {
                    let old = cell.take();
                    *cell.borrow_mut() = old.union(out);
                }
                // Not bound here: `$headers` or `$id`, not the payload.
                Demand::Nothing
            }
            Term::Path(base, path) => {
                let mut read = out;
                let mut keys = Demand::Nothing;
                for (part, _optional) in path.0.iter().rev() {
                    read = match part {
                        PathPart::Index(key) => match literal(key) {
                            Some(Literal::Str(key)) => Demand::field(key, read),
                            Some(Literal::Num) => Demand::index(read),
                            None => {
                                keys = keys.union(self.term(key, Demand::All, env)?);
                                Demand::All
                            }
                        },
                        PathPart::Range(None, None) => Demand::iter(read),
                        PathPart::Range(from, upto) => {
                            for bound in [from, upto].into_iter().flatten() {
                                keys = keys.union(self.term(bound, Demand::All, env)?);
                            }
                            Demand::index(read.items())
                        }
                    };
                }
                self.term(base, read, env)?.union(keys)
            }
        })
    }

    /// `"...\(f)..."` and `@fmt "...\(f)..."`: each `f` read whole, on the input.
    fn string(
        &mut self,
        fmt: Option<&'t str>,
        parts: &'t [StrPart<&'t str, Term<&'t str>>],
        env: &Env<'t>,
    ) -> Step {
        let mut read = Demand::Nothing;
        for part in parts {
            if let StrPart::Term(f) = part {
                read = read.union(self.term(f, Demand::All, env)?);
                // The format runs on `f`'s output, read whole already; followed only for the
                // variables it may read.
                if let Some(fmt) = fmt {
                    self.call(fmt, &[], Demand::All, env)?;
                }
            }
        }
        Ok(read)
    }

    fn object(
        &mut self,
        entries: &'t [(Term<&'t str>, Option<Term<&'t str>>)],
        out: &Demand,
        env: &Env<'t>,
    ) -> Step {
        let mut read = Demand::Nothing;
        for (key, value) in entries {
            let name = match literal(key) {
                Some(Literal::Str(name)) => Some(name),
                _ => None,
            };
            read = read.union(match (key, value) {
                // `{$x}`
                (Term::Var(x), None) => {
                    let name = x.strip_prefix('$').unwrap_or(x).as_bytes();
                    self.term(key, out.field_of(Some(name)), env)?
                }
                // `{a}`, `{"a"}`: the field of the input.
                (_, None) => match name {
                    Some(name) => {
                        let then = out.field_of(Some(&name));
                        Demand::field(name, then)
                    }
                    None => self.term(key, Demand::All, env)?.union(Demand::All),
                },
                (_, Some(value)) => {
                    let keys = self.term(key, Demand::All, env)?;
                    keys.union(self.term(value, out.field_of(name.as_deref()), env)?)
                }
            });
        }
        Ok(read)
    }

    fn binary(
        &mut self,
        l: &'t Term<&'t str>,
        op: &'t BinaryOp<&'t str>,
        r: &'t Term<&'t str>,
        out: Demand,
        env: &Env<'t>,
    ) -> Step {
        Ok(match op {
            BinaryOp::Pipe(None) => {
                let middle = self.term(r, out, env)?;
                self.term(l, middle, env)?
            }
            BinaryOp::Pipe(Some(pattern)) => {
                let (inner, cells) = bind(pattern, env);
                let rest = self.term(r, out, &inner)?;
                match self.pattern(pattern, &cells, &inner)? {
                    Some(bound) => self.term(l, bound, env)?.union(rest),
                    None => {
                        self.term(l, Demand::All, env)?;
                        Demand::All
                    }
                }
            }
            BinaryOp::Comma => self
                .term(l, out.clone(), env)?
                .union(self.term(r, out, env)?),
            BinaryOp::Alt => {
                let first = self.term(l, out.clone().union(Demand::shape()), env)?;
                first.union(self.term(r, out, env)?)
            }
            BinaryOp::Or | BinaryOp::And => {
                let left = self.term(l, Demand::shape(), env)?;
                left.union(self.term(r, Demand::shape(), env)?)
            }
            BinaryOp::Math(_) | BinaryOp::Cmp(_) => {
                let left = self.term(l, Demand::All, env)?;
                left.union(self.term(r, Demand::All, env)?)
            }
            // Assignments and updates work on paths of the input and return it changed.
            BinaryOp::Assign | BinaryOp::Update | BinaryOp::UpdateMath(_) | BinaryOp::UpdateAlt => {
                self.term(l, Demand::All, env)?;
                self.term(r, Demand::All, env)?;
                Demand::All
            }
        })
    }

    /// What a destructuring pattern reads of the value it takes apart, from what is read of
    /// its variables; `None` when a key is computed (then everything is read).
    fn pattern(
        &mut self,
        pattern: &'t Pattern<&'t str>,
        cells: &[Rc<RefCell<Demand>>],
        env: &Env<'t>,
    ) -> Result<Option<Demand>, OutOfSteps> {
        let mut next = cells.iter();
        self.pattern_in(pattern, &mut next, env)
    }

    fn pattern_in<'c>(
        &mut self,
        pattern: &'t Pattern<&'t str>,
        cells: &mut impl Iterator<Item = &'c Rc<RefCell<Demand>>>,
        env: &Env<'t>,
    ) -> Result<Option<Demand>, OutOfSteps> {
        Ok(Some(match pattern {
            Pattern::Var(_) => cells.next().map(|c| c.borrow().clone()).unwrap_or_default(),
            Pattern::Arr(items) => {
                let mut read = Demand::Nothing;
                for item in items {
                    match self.pattern_in(item, cells, env)? {
                        Some(d) => read = read.union(d),
                        None => return Ok(None),
                    }
                }
                Demand::index(read)
            }
            Pattern::Obj(entries) => {
                let mut read = Demand::Nothing;
                for (key, item) in entries {
                    let Some(Literal::Str(key)) = literal(key) else {
                        self.term(key, Demand::All, env)?;
                        return Ok(None);
                    };
                    match self.pattern_in(item, cells, env)? {
                        Some(d) => read = read.union(Demand::field(key, d)),
                        None => return Ok(None),
                    }
                }
                read
            }
        }))
    }

    /// `reduce xs as $x (init; update)` and `foreach xs as $x (init; update; extract)`.
    fn fold(
        &mut self,
        xs: &'t Term<&'t str>,
        pattern: &'t Pattern<&'t str>,
        args: &'t [Term<&'t str>],
        out: Demand,
        env: &Env<'t>,
    ) -> Step {
        let (inner, cells) = bind(pattern, env);
        let (init, update, extract) = match args {
            [init, update] => (init, update, None),
            [init, update, extract] => (init, update, Some(extract)),
            // Refused by the compiler; read everything all the same.
            _ => return Ok(Demand::All),
        };
        // What is read of the accumulator: what the outputs read, and what each update reads
        // of the one before, to a fixed point.
        let wanted = match extract {
            Some(extract) => self.term(extract, out, &inner)?,
            None => out,
        };
        let mut acc = wanted.clone();
        for round in 0.. {
            let next = wanted
                .clone()
                .union(self.term(update, acc.clone(), &inner)?);
            if next == acc {
                break;
            }
            acc = if round >= 4 { Demand::All } else { next };
        }
        let read = self.term(init, acc, env)?;
        match self.pattern(pattern, &cells, &inner)? {
            Some(bound) => Ok(read.union(self.term(xs, bound, env)?)),
            None => {
                self.term(xs, Demand::All, env)?;
                Ok(Demand::All)
            }
        }
    }

    /// A call: a parameter, a definition (the user's, then the prelude's), else a native filter.
    fn call(
        &mut self,
        name: &'t str,
        args: &'t [Term<&'t str>],
        out: Demand,
        env: &Env<'t>,
    ) -> Step {
        match env.filter(name, args.len()) {
            Some(Bind::Arg(_, term, caller, active)) => {
                // The argument is the caller's: the definitions followed since are not around it.
                let (term, caller) = (*term, caller.clone());
                let inside = self.active.split_off((*active).min(self.active.len()));
                let read = self.term(term, out, &caller);
                self.active.extend(inside);
                return read;
            }
            Some(Bind::Def(def, defined)) => {
                let (def, defined) = (*def, defined.clone());
                return self.follow(def, defined, args, out, env);
            }
            _ => {}
        }
        let prelude = &self.prelude[..env.prelude];
        let found = prelude
            .iter()
            .rposition(|def| def.name == name && def.args.len() == args.len());
        if let Some(i) = found {
            let def = &self.prelude[i];
            let defined = Env {
                list: None,
                prelude: i,
            };
            return self.follow(def, defined, args, out, env);
        }
        // A native filter: reads its input whole, and its arguments run on the input.
        self.read_whole(args, env)
    }

    /// Everything read of the input, and each argument's variables read whole.
    fn read_whole(&mut self, args: &'t [Term<&'t str>], env: &Env<'t>) -> Step {
        for arg in args {
            self.term(arg, Demand::All, env)?;
        }
        Ok(Demand::All)
    }

    /// A definition called with `args` from `caller`: its body followed with each filter
    /// parameter bound to its argument, each `$` parameter to what the body reads of it.
    fn follow(
        &mut self,
        def: &'t Def<&'t str>,
        defined: Env<'t>,
        args: &'t [Term<&'t str>],
        out: Demand,
        caller: &Env<'t>,
    ) -> Step {
        let this: *const Def<&'t str> = def;
        if self.active.contains(&this) {
            return self.read_whole(args, caller);
        }
        if self.active.len() >= MAX_INLINE_DEPTH {
            return Err(OutOfSteps);
        }
        let mut body = defined.with(Bind::Def(def, defined.clone()));
        let mut values = Vec::new();
        for (param, arg) in def.args.iter().zip(args) {
            if param.starts_with('$') {
                let cell = Rc::new(RefCell::new(Demand::Nothing));
                body = body.with(Bind::Var(param, cell.clone()));
                values.push((arg, cell));
            } else {
                let active = self.active.len();
                body = body.with(Bind::Arg(param, arg, caller.clone(), active));
            }
        }
        self.active.push(this);
        let read = self.term(&def.body, out, &body);
        self.active.pop();
        let mut read = read?;
        for (arg, cell) in values {
            let wanted = cell.take();
            read = read.union(self.term(arg, wanted, caller)?);
        }
        Ok(read)
    }
}

/// The variables of `pattern` bound in a new scope, with the cells that collect what is read
/// of each (in the pattern's order).
fn bind<'t>(pattern: &'t Pattern<&'t str>, env: &Env<'t>) -> (Env<'t>, Vec<Rc<RefCell<Demand>>>) {
    let mut vars = Vec::new();
    collect_vars(pattern, &mut vars);
    let mut inner = env.clone();
    let mut cells = Vec::new();
    for x in vars {
        let cell = Rc::new(RefCell::new(Demand::Nothing));
        inner = inner.with(Bind::Var(x, cell.clone()));
        cells.push(cell);
    }
    (inner, cells)
}

fn collect_vars<'t>(pattern: &'t Pattern<&'t str>, vars: &mut Vec<&'t str>) {
    match pattern {
        Pattern::Var(x) => vars.push(x),
        Pattern::Arr(items) => items.iter().for_each(|p| collect_vars(p, vars)),
        Pattern::Obj(entries) => entries.iter().for_each(|(_, p)| collect_vars(p, vars)),
    }
}

enum Literal {
    Str(Vec<u8>),
    Num,
}

/// A key written as a literal: a string without interpolation (unescaped), or a number.
fn literal(t: &Term<&str>) -> Option<Literal> {
    match t {
        Term::Num(_) => Some(Literal::Num),
        Term::Neg(n) if matches!(**n, Term::Num(_)) => Some(Literal::Num),
        Term::Str(None, parts) => {
            let mut key = String::new();
            for part in parts {
                match part {
                    StrPart::Str(s) => key.push_str(s),
                    StrPart::Char(c) => key.push(*c),
                    StrPart::Term(_) => return None,
                }
            }
            Some(Literal::Str(key.into_bytes()))
        }
        _ => None,
    }
}
