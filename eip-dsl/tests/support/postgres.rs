//! A PostgreSQL database of a test's own on the local server (`PGUSER`, `PGHOST`, `PGPORT`;
//! defaults root@127.0.0.1:5432), made fresh and dropped when the test is done.

/// The URL of `database` on the local server.
pub fn pg_url(database: &str) -> String {
    let env = |name: &str, default: &str| std::env::var(name).unwrap_or_else(|_| default.into());
    format!(
        "postgres://{}@{}:{}/{database}",
        env("PGUSER", "root"),
        env("PGHOST", "127.0.0.1"),
        env("PGPORT", "5432")
    )
}

/// A database named `PREFIX_PID`, connected.
pub struct TestDatabase {
    admin: sqlx::PgPool,
    /// Its name.
    pub name: String,
    /// Its URL.
    pub url: String,
    /// A pool on it.
    pub pool: sqlx::PgPool,
}

impl TestDatabase {
    /// Drops any database of the same name left by an earlier run, and makes it anew.
    pub async fn create(prefix: &str) -> TestDatabase {
        let admin = sqlx::PgPool::connect(&pg_url("postgres"))
            .await
            .unwrap_or_else(|e| panic!("PostgreSQL at {} is needed: {e}", pg_url("postgres")));
        let name = format!("{prefix}_{}", std::process::id());
        sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
            .execute(&admin)
            .await
            .expect("an old database dropped");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&admin)
            .await
            .expect("the test database");
        let url = pg_url(&name);
        let pool = sqlx::PgPool::connect(&url).await.expect("connects");
        TestDatabase {
            admin,
            name,
            url,
            pool,
        }
    }

    /// Runs `test` with the database's name, URL and pool, drops the database whatever the
    /// outcome, then passes on a panic.
    pub async fn run<F: std::future::Future<Output = ()>>(
        self,
        test: impl FnOnce(String, String, sqlx::PgPool) -> F,
    ) {
        use futures::FutureExt as _;
        let run = test(self.name.clone(), self.url.clone(), self.pool.clone());
        let outcome = std::panic::AssertUnwindSafe(run).catch_unwind().await;
        self.pool.close().await;
        let _ = sqlx::query(&format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        ))
        .execute(&self.admin)
        .await;
        if let Err(panic) = outcome {
            std::panic::resume_unwind(panic);
        }
    }
}
