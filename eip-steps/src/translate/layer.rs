//! The Message Translator as a step: a `tower::Service` and its `Layer`.

use std::sync::Arc;
use std::task::{Context, Poll};

use futures::future::{self, Either, MapErr, Ready};
use futures::{TryFuture, TryFutureExt};

use eip_core::Message;
use tower::{Layer, Service};

use super::{StepError, Translate};

/// Translates each message, then passes the result to the inner service. A message that can
/// not be translated is not passed on: it comes back in [`StepError::Failed`](crate::error::StepError::Failed).
///
/// ```
/// use eip_core::Message;
/// use eip_steps::error::StepError;
/// use eip_steps::expr::Jq;
/// use eip_steps::translate::{Translate, TranslateService};
/// use tower::{Service, ServiceExt, service_fn};
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let upper = Translate::builder().payload(Jq::compile(".name | ascii_upcase").unwrap()).build();
/// let echo = service_fn(|m: Message| async move { Ok::<_, std::convert::Infallible>(m) });
/// let mut step = TranslateService::new(echo, upper);
///
/// let out = step.ready().await.unwrap().call(Message::new(r#"{"name": "ada"}"#)).await.unwrap();
/// assert_eq!(out.payload_str(), Some(r#""ADA""#));
///
/// let bad = Message::new("not json");
/// let err = step.ready().await.unwrap().call(bad.clone()).await.unwrap_err();
/// assert!(err.to_string().starts_with("translate payload: payload is not JSON"));
/// assert_eq!(err.into_message(), Some(bad));
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct TranslateService<S> {
    inner: S,
    translate: Arc<Translate>,
}

impl<S> TranslateService<S> {
    /// A translator in front of `inner`.
    pub fn new(inner: S, translate: Translate) -> Self {
        TranslateService {
            inner,
            translate: Arc::new(translate),
        }
    }

    /// A layer that puts `translate` in front of a service.
    pub fn layer(translate: Translate) -> TranslateLayer {
        TranslateLayer::new(translate)
    }

    /// The translation.
    pub fn translate(&self) -> &Translate {
        &self.translate
    }

    /// The inner service.
    pub fn get_ref(&self) -> &S {
        &self.inner
    }

    /// The inner service, for change.
    pub fn get_mut(&mut self) -> &mut S {
        &mut self.inner
    }

    /// The inner service.
    pub fn into_inner(self) -> S {
        self.inner
    }
}

impl<S: Service<Message>> Service<Message> for TranslateService<S> {
    type Response = S::Response;
    type Error = StepError<S::Error>;
    type Future = TranslateFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx).map_err(StepError::Inner)
    }

    fn call(&mut self, msg: Message) -> Self::Future {
        // The message is a few reference counts: keeping it to hand back costs no copy.
        match self.translate.apply(msg.clone()) {
            Ok(translated) => {
                let inner: fn(S::Error) -> StepError<S::Error> = StepError::Inner;
                Either::Right(self.inner.call(translated).map_err(inner))
            }
            Err(error) => Either::Left(future::ready(Err(StepError::Failed {
                error,
                message: msg,
            }))),
        }
    }
}

/// The future of a [`TranslateService`]: the inner service's, or the translation's error
/// at once.
pub type TranslateFuture<F> = Either<
    Ready<Result<<F as TryFuture>::Ok, StepError<<F as TryFuture>::Error>>>,
    MapErr<F, fn(<F as TryFuture>::Error) -> StepError<<F as TryFuture>::Error>>,
>;

/// Puts a [`TranslateService`] in front of a service. Every service it makes shares one
/// [`Translate`].
#[derive(Clone, Debug)]
pub struct TranslateLayer {
    translate: Arc<Translate>,
}

impl TranslateLayer {
    /// A layer of translators applying `translate`.
    pub fn new(translate: Translate) -> Self {
        TranslateLayer {
            translate: Arc::new(translate),
        }
    }
}

impl<S> Layer<S> for TranslateLayer {
    type Service = TranslateService<S>;

    fn layer(&self, inner: S) -> TranslateService<S> {
        TranslateService {
            inner,
            translate: self.translate.clone(),
        }
    }
}
