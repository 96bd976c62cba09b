//! What the database adapter's tests share: a schema (PostgreSQL), a database (MariaDB) or a
//! file (SQLite) of each test's own, dropped at the end even when the test fails, and one test
//! per database for each test function.
// Each test file uses a part of this module.
#![allow(dead_code)]

use std::path::PathBuf;
use std::time::Duration;

use eip_adapters::sql::{Claim, ClaimColumns, Connection};
use sqlx::{MySqlPool, PgPool, SqlitePool};

pub const PG_SERVER: &str = "postgres://${PGUSER:-root}@${PGHOST:-127.0.0.1}:${PGPORT:-5432}";
pub const MARIADB_SERVER: &str =
    "mysql://${MYSQL_USER:-root}@${MYSQL_HOST:-127.0.0.1}:${MYSQL_TCP_PORT:-3306}";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Postgres,
    MariaDb,
    Sqlite,
}

pub enum Admin {
    Postgres(PgPool),
    MariaDb(MySqlPool),
    Sqlite(SqlitePool),
}

/// A schema, database or file of the test's own, dropped at the end.
pub struct TestDb {
    pub kind: Kind,
    pub name: String,
    pub url: String,
    pub admin: Admin,
    pub file: Option<PathBuf>,
}

/// The environment's expansion of `${NAME:-default}`, as the adapter does it.
pub fn expand(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let end = start + rest[start..].find('}').unwrap();
        let (name, default) = rest[start + 2..end].split_once(":-").unwrap();
        out.push_str(&std::env::var(name).unwrap_or_else(|_| default.to_owned()));
        rest = &rest[end + 1..];
    }
    out + rest
}

impl TestDb {
    pub async fn new(kind: Kind, test: &str) -> TestDb {
        let name = format!(
            "eip_sql_{test}_{}",
            &eip_core::MessageId::new().to_string().replace('-', "")[..12]
        );
        let (url, admin, file) = match kind {
            Kind::Postgres => {
                let server = expand(PG_SERVER);
                let pool = PgPool::connect(&format!("{server}/test"))
                    .await
                    .unwrap_or_else(|e| {
                        panic!("PostgreSQL at {server}/test is not reachable: {e}")
                    });
                sqlx::query(&format!("CREATE SCHEMA {name}"))
                    .execute(&pool)
                    .await
                    .unwrap();
                let url = format!("{PG_SERVER}/test?options=-c%20search_path%3D{name}");
                let admin = PgPool::connect(&expand(&url)).await.unwrap();
                (url, Admin::Postgres(admin), None)
            }
            Kind::MariaDb => {
                let server = expand(MARIADB_SERVER);
                let pool = MySqlPool::connect(&format!("{server}/test"))
                    .await
                    .unwrap_or_else(|e| panic!("MariaDB at {server}/test is not reachable: {e}"));
                sqlx::query(&format!("CREATE DATABASE {name}"))
                    .execute(&pool)
                    .await
                    .unwrap();
                let url = format!("{MARIADB_SERVER}/{name}");
                let admin = MySqlPool::connect(&expand(&url)).await.unwrap();
                (url, Admin::MariaDb(admin), None)
            }
            Kind::Sqlite => {
                let file = std::env::temp_dir().join(format!("{name}.db"));
                let url = format!("sqlite://{}?mode=rwc", file.display());
                let admin = SqlitePool::connect(&url).await.unwrap();
                sqlx::query("PRAGMA journal_mode = WAL")
                    .execute(&admin)
                    .await
                    .unwrap();
                (url, Admin::Sqlite(admin), Some(file))
            }
        };
        TestDb {
            kind,
            name,
            url,
            admin,
            file,
        }
    }

    pub fn connection(&self) -> Connection {
        Connection::new(self.url.clone())
    }

    pub async fn exec(&self, sql: &str) {
        match &self.admin {
            Admin::Postgres(p) => drop(sqlx::query(sql).execute(p).await.unwrap()),
            Admin::MariaDb(p) => drop(sqlx::query(sql).execute(p).await.unwrap()),
            Admin::Sqlite(p) => drop(sqlx::query(sql).execute(p).await.unwrap()),
        }
    }

    pub async fn count(&self, sql: &str) -> i64 {
        match &self.admin {
            Admin::Postgres(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
            Admin::MariaDb(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
            Admin::Sqlite(p) => sqlx::query_scalar(sql).fetch_one(p).await.unwrap(),
        }
    }

    pub async fn texts(&self, sql: &str) -> Vec<String> {
        match &self.admin {
            Admin::Postgres(p) => sqlx::query_scalar(sql).fetch_all(p).await.unwrap(),
            Admin::MariaDb(p) => sqlx::query_scalar(sql).fetch_all(p).await.unwrap(),
            Admin::Sqlite(p) => sqlx::query_scalar(sql).fetch_all(p).await.unwrap(),
        }
    }

    /// The SQL type of an auto-numbered key.
    pub fn serial(&self) -> &'static str {
        match self.kind {
            Kind::Postgres => "SERIAL PRIMARY KEY",
            Kind::MariaDb => "INTEGER AUTO_INCREMENT PRIMARY KEY",
            Kind::Sqlite => "INTEGER PRIMARY KEY AUTOINCREMENT",
        }
    }

    /// The claim this database uses.
    pub fn claim(&self, timeout: Duration) -> Claim {
        match self.kind {
            Kind::Sqlite => Claim::Column(ClaimColumns::new("orders", "id").timeout(timeout)),
            _ => Claim::SkipLocked,
        }
    }

    /// An `orders` table with `rows` rows to poll.
    pub async fn orders(&self, rows: usize) {
        self.exec(&format!(
            "CREATE TABLE orders (id {}, item VARCHAR(40) NOT NULL, qty INTEGER NOT NULL, \
             done INTEGER NOT NULL DEFAULT 0, claimed_by VARCHAR(200), claimed_at BIGINT)",
            self.serial()
        ))
        .await;
        for chunk in (0..rows).collect::<Vec<_>>().chunks(100) {
            let values: Vec<String> = chunk.iter().map(|i| format!("('item {i}', {i})")).collect();
            self.exec(&format!(
                "INSERT INTO orders (item, qty) VALUES {}",
                values.join(", ")
            ))
            .await;
        }
    }
}

impl Drop for TestDb {
    fn drop(&mut self) {
        let (kind, name, file) = (self.kind, self.name.clone(), self.file.take());
        // Drop is not async: a thread of its own runs the clean-up on a runtime of its own.
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async move {
                match kind {
                    Kind::Postgres => {
                        if let Ok(p) = PgPool::connect(&format!("{}/test", expand(PG_SERVER))).await
                        {
                            let _ = sqlx::query(&format!("DROP SCHEMA {name} CASCADE"))
                                .execute(&p)
                                .await;
                        }
                    }
                    Kind::MariaDb => {
                        if let Ok(p) =
                            MySqlPool::connect(&format!("{}/test", expand(MARIADB_SERVER))).await
                        {
                            let _ = sqlx::query(&format!("DROP DATABASE {name}"))
                                .execute(&p)
                                .await;
                        }
                    }
                    Kind::Sqlite => {
                        if let Some(file) = file {
                            for suffix in ["", "-wal", "-shm"] {
                                let _ = std::fs::remove_file(format!("{}{suffix}", file.display()));
                            }
                        }
                    }
                }
            });
        })
        .join()
        .unwrap();
    }
}

/// One test per database for each of these: `NAME::postgres`, `NAME::mariadb`, `NAME::sqlite`.
#[macro_export]
macro_rules! on_every_database {
    ($($test:ident),* $(,)?) => {$(
        mod $test {
            #[tokio::test]
            async fn postgres() {
                super::$test($crate::support::sql_db::Kind::Postgres).await;
            }

            #[tokio::test]
            async fn mariadb() {
                super::$test($crate::support::sql_db::Kind::MariaDb).await;
            }

            #[tokio::test]
            async fn sqlite() {
                super::$test($crate::support::sql_db::Kind::Sqlite).await;
            }
        }
    )*};
}
