//! The parser: recursive descent over the tokens, one function per grammar rule.
//!
//! ```text
//! predicate  = or-expr END
//! or-expr    = and-expr { "or" and-expr }
//! and-expr   = not-expr { "and" not-expr }
//! not-expr   = "not" not-expr | primary
//! primary    = "(" or-expr ")" | "exists" "(" operand ")" | "true" | "false"
//!            | operand [ test ]
//! test       = cmp-op literal | "=~" string | "matches" string
//! ```
//!
//! The string right of `=~` goes to the regex compiler as written between its quotes (a
//! backslash only keeps the next character from closing the string); every other string has
//! its escapes applied.
//!
//! ```text
//! operand    = jsonpath | "header" "(" string ")" | "subject"
//! ```

use regex::Regex;

use super::error::{PredicateError, PredicateErrorKind};
use super::eval::{CmpOp, Literal, Node, Operand};
use super::json_path::JsonPathQuery;
use super::lexer::{Tok, Token, tokenize};
use crate::message::names;
use crate::topic::TopicPattern;

/// How deep parentheses and `not`s may nest: enough for any hand-written predicate, and a
/// bound on the parser's recursion whatever the input.
pub(super) const MAX_DEPTH: usize = 64;

const EXPRESSION: &str = "an expression (a JSONPath `$...`, `header(\"name\")`, `subject`, `exists(...)`, `not`, `(`, \
     `true` or `false`)";

/// Parses a whole predicate.
pub(super) fn parse(source: &str) -> Result<Node, PredicateError> {
    let tokens = tokenize(source)?;
    let mut parser = Parser {
        source,
        tokens,
        pos: 0,
        depth: 0,
    };
    let node = parser.or_expr()?;
    let next = parser.peek();
    if next.tok != Tok::End {
        return Err(parser.unexpected("`and`, `or` or the end of the predicate"));
    }
    Ok(node)
}

struct Parser<'a> {
    source: &'a str,
    tokens: Vec<Token<'a>>,
    pos: usize,
    depth: usize,
}

impl<'a> Parser<'a> {
    fn peek(&self) -> &Token<'a> {
        // The token list always ends with `End`, and `advance` never moves past it.
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn advance(&mut self) -> Token<'a> {
        let token = self.peek().clone();
        if token.tok != Tok::End {
            self.pos += 1;
        }
        token
    }

    fn is_word(&self, word: &str) -> bool {
        matches!(self.peek().tok, Tok::Word(w) if w == word)
    }

    fn found(&self, token: &Token<'_>) -> String {
        match token.tok {
            Tok::End => "the end of the predicate".to_owned(),
            _ => format!("`{}`", &self.source[token.start..token.end]),
        }
    }

    fn unexpected(&self, expected: &str) -> PredicateError {
        let token = self.peek();
        PredicateError::unexpected(token.start, expected, &self.found(token))
    }

    fn expect(&mut self, tok: Tok<'_>, expected: &str) -> Result<Token<'a>, PredicateError> {
        if self.peek().tok == tok {
            Ok(self.advance())
        } else {
            Err(self.unexpected(expected))
        }
    }

    fn nested<T>(
        &mut self,
        at: usize,
        f: impl FnOnce(&mut Self) -> Result<T, PredicateError>,
    ) -> Result<T, PredicateError> {
        if self.depth >= MAX_DEPTH {
            return Err(PredicateError::new(
                at,
                PredicateErrorKind::TooDeep(MAX_DEPTH),
            ));
        }
        self.depth += 1;
        let result = f(self);
        self.depth -= 1;
        result
    }

    fn or_expr(&mut self) -> Result<Node, PredicateError> {
        let mut nodes = vec![self.and_expr()?];
        while self.is_word("or") {
            self.advance();
            nodes.push(self.and_expr()?);
        }
        Ok(if nodes.len() == 1 {
            nodes.remove(0)
        } else {
            Node::Or(nodes)
        })
    }

    fn and_expr(&mut self) -> Result<Node, PredicateError> {
        let mut nodes = vec![self.not_expr()?];
        while self.is_word("and") {
            self.advance();
            nodes.push(self.not_expr()?);
        }
        Ok(if nodes.len() == 1 {
            nodes.remove(0)
        } else {
            Node::And(nodes)
        })
    }

    fn not_expr(&mut self) -> Result<Node, PredicateError> {
        if self.is_word("not") {
            let not = self.advance();
            let inner = self.nested(not.start, Self::not_expr)?;
            return Ok(Node::Not(Box::new(inner)));
        }
        self.primary()
    }

    fn primary(&mut self) -> Result<Node, PredicateError> {
        let token = self.peek().clone();
        match token.tok {
            Tok::LParen => {
                self.advance();
                let node = self.nested(token.start, Self::or_expr)?;
                let close = format!("`)` to close the `(` at byte {}", token.start);
                self.expect(Tok::RParen, &close)?;
                Ok(node)
            }
            Tok::Word("exists") => {
                self.advance();
                self.expect(Tok::LParen, "`(` after `exists`")?;
                let operand = self.operand()?;
                self.expect(Tok::RParen, "`)` to close `exists(`")?;
                Ok(Node::Exists(operand))
            }
            Tok::Word("true") => {
                self.advance();
                Ok(Node::Const(true))
            }
            Tok::Word("false") => {
                self.advance();
                Ok(Node::Const(false))
            }
            Tok::Path(_) | Tok::Word("header") | Tok::Word("subject") => {
                let operand = self.operand()?;
                self.test(operand)
            }
            Tok::Num(_) | Tok::Str { .. } | Tok::Word("null") => Err(PredicateError::unexpected(
                token.start,
                format!(
                    "{EXPRESSION}; a literal goes right of the operator, as in `$.price > 100`"
                ),
                &self.found(&token),
            )),
            Tok::Word(w) if !is_keyword(w) && is_keyword(&w.to_ascii_lowercase()) => {
                Err(PredicateError::unexpected(
                    token.start,
                    format!("{EXPRESSION}; keywords are lower-case"),
                    &self.found(&token),
                ))
            }
            _ => Err(self.unexpected(EXPRESSION)),
        }
    }

    fn operand(&mut self) -> Result<Operand, PredicateError> {
        let token = self.peek().clone();
        match token.tok {
            Tok::Path(path) => {
                self.advance();
                Ok(Operand::Path(JsonPathQuery::parse(path, token.start)?))
            }
            Tok::Word("subject") => {
                self.advance();
                Ok(Operand::Header(names::SUBJECT.into()))
            }
            Tok::Word("header") => {
                self.advance();
                self.expect(Tok::LParen, "`(` after `header`")?;
                let (_, name) = self.string("the header name as a quoted string")?;
                self.expect(Tok::RParen, "`)` to close `header(`")?;
                Ok(Operand::Header(name.into()))
            }
            _ => Err(self.unexpected(
                "a JSONPath `$...`, `header(\"name\")` or `subject` inside `exists(...)`",
            )),
        }
    }

    /// The optional test after an operand; a bare operand tests that it has a value.
    fn test(&mut self, operand: Operand) -> Result<Node, PredicateError> {
        let op = self.peek().clone();
        match op.tok {
            Tok::Cmp(cmp) => {
                self.advance();
                let literal = self.literal()?;
                let unordered = match literal.1 {
                    Literal::Null => Some("null"),
                    Literal::Bool(true) => Some("true"),
                    Literal::Bool(false) => Some("false"),
                    _ => None,
                };
                if let (Some(literal), false) = (unordered, matches!(cmp, CmpOp::Eq | CmpOp::Ne)) {
                    return Err(PredicateError::new(
                        op.start,
                        PredicateErrorKind::Unordered {
                            op: cmp.as_str(),
                            literal,
                        },
                    ));
                }
                Ok(Node::Compare(operand, cmp, literal.1))
            }
            Tok::RegexMatch => {
                self.advance();
                let (at, pattern) = match self.peek().tok {
                    Tok::Str { raw, .. } => (self.advance().start, raw),
                    _ => return Err(self.unexpected("a regular expression as a quoted string")),
                };
                let regex = Regex::new(pattern).map_err(|e| {
                    PredicateError::new(at, PredicateErrorKind::Regex(e.to_string()))
                })?;
                Ok(Node::Regex(operand, regex))
            }
            Tok::Word("matches") => {
                self.advance();
                let (at, pattern) = self.string("a topic pattern as a quoted string")?;
                let pattern = TopicPattern::parse(&pattern)
                    .map_err(|e| PredicateError::new(at, PredicateErrorKind::TopicPattern(e)))?;
                Ok(Node::Topic(operand, pattern))
            }
            _ => Ok(Node::Exists(operand)),
        }
    }

    fn literal(&mut self) -> Result<(usize, Literal), PredicateError> {
        let token = self.peek().clone();
        let literal = match token.tok {
            Tok::Num(n) => Literal::Num(n),
            Tok::Str { text, .. } => Literal::Str(text?),
            Tok::Word("true") => Literal::Bool(true),
            Tok::Word("false") => Literal::Bool(false),
            Tok::Word("null") => Literal::Null,
            _ => {
                return Err(self.unexpected(
                    "a literal (a number, a quoted string, `true`, `false` or `null`)",
                ));
            }
        };
        self.advance();
        Ok((token.start, literal))
    }

    /// A string literal's text, escapes applied.
    fn string(&mut self, expected: &str) -> Result<(usize, String), PredicateError> {
        match &self.peek().tok {
            Tok::Str { text, .. } => {
                let text = text.clone()?;
                Ok((self.advance().start, text))
            }
            _ => Err(self.unexpected(expected)),
        }
    }
}

fn is_keyword(word: &str) -> bool {
    matches!(
        word,
        "and"
            | "or"
            | "not"
            | "exists"
            | "header"
            | "subject"
            | "matches"
            | "true"
            | "false"
            | "null"
    )
}
