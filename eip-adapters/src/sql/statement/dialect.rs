//! The SQL dialects: how each writes a placeholder and how many values it binds at most.

/// The SQL dialects the adapter speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    /// PostgreSQL: `$n` placeholders, `FOR UPDATE SKIP LOCKED`.
    Postgres,
    /// MySQL and MariaDB: `?` placeholders, `FOR UPDATE SKIP LOCKED` from MariaDB 10.6 and
    /// MySQL 8.0.
    MySql,
    /// SQLite: `?` placeholders, no row locks (a claim column instead).
    Sqlite,
}

impl Dialect {
    /// The placeholder of the `n`th (from 1) bound value.
    pub(crate) fn placeholder(self, n: usize) -> String {
        let mut sql = String::new();
        self.push_placeholder(&mut sql, n);
        sql
    }

    /// Appends the placeholder of the `n`th (from 1) bound value to `sql`.
    pub(crate) fn push_placeholder(self, sql: &mut String, n: usize) {
        match self {
            Dialect::Postgres => {
                use std::fmt::Write;
                let _ = write!(sql, "${n}");
            }
            Dialect::MySql | Dialect::Sqlite => sql.push('?'),
        }
    }

    /// The most values one statement binds: PostgreSQL's and MySQL's protocols count them in
    /// 16 bits; SQLite's `SQLITE_MAX_VARIABLE_NUMBER` is 32 766 (the default since 3.32, and
    /// that of the SQLite sqlx bundles).
    pub(crate) fn max_parameters(self) -> usize {
        match self {
            Dialect::Postgres | Dialect::MySql => 65_535,
            Dialect::Sqlite => 32_766,
        }
    }
}
