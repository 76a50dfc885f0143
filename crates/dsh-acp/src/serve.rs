//! The ACP connection: the protocol crate's agent builder with one
//! handler per method, each answered by the [`Front`].
//!
//! Handlers that wait for a session's server (everything but the
//! settings) run on tasks of their own, so one session's slow request
//! never holds another's, nor a `session/cancel`.

use crate::error::AcpError;
use crate::front::{AcpConfig, Front};
use crate::session::Open;
use crate::transport::{self, MAX_LINE_BYTES};
use agent_client_protocol::v1::schema::{
    AuthenticateRequest, CancelNotification, CloseSessionRequest, ListSessionsRequest,
    LoadSessionRequest, NewSessionRequest, PromptRequest, ResumeSessionRequest,
    SetSessionConfigOptionRequest, SetSessionModeRequest,
};
use agent_client_protocol::v1::{ConnectionTo, Responder};
use agent_client_protocol::{
    Agent, Client, Handled, JsonRpcResponse, UntypedMessage, on_receive_notification,
    on_receive_request,
};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::sync::Arc;
use tokio::io::{AsyncRead, AsyncWrite};

/// Serves ACP on `input`/`output` until the client closes its input or
/// `stop` completes (a signal); then every session's server is shut down
/// (running turns stop, commands and MCP servers are killed with their
/// process groups, locks released).
pub async fn serve(
    config: AcpConfig,
    input: impl AsyncRead + Unpin + Send + 'static,
    output: impl AsyncWrite + Unpin + Send + 'static,
    stop: impl std::future::Future<Output = ()>,
) -> Result<(), AcpError> {
    let front = Arc::new(Front::new(config));
    let [
        initialize,
        new,
        load,
        resume,
        prompt,
        cancel,
        list,
        close,
        config_option,
        mode,
    ] = std::array::from_fn(|_| Arc::clone(&front));
    let connection = Agent
        .v1()
        .name("dsh")
        // `initialize` is answered by a handler of any method that claims
        // only it: with no typed `initialize` handler the library does not
        // refuse requests that come before initialization completes (as
        // the official profile serves `session/new` without, or pipelined
        // behind, an `initialize`), and the result is sent as written.
        .on_receive_request(
            async move |request: UntypedMessage, responder: Responder<Value>, _cx| {
                // `session/list` takes params, if only `{}` (as the official
                // profile, which refuses it without).
                if request.method() == "session/list" && request.params().is_null() {
                    let error = agent_client_protocol::Error::new(
                        agent_client_protocol::ErrorCode::INVALID_PARAMS,
                        "Invalid params",
                    );
                    responder.respond_with_error(error)?;
                    return Ok(Handled::Yes);
                }
                if request.method() != "initialize" {
                    return Ok(Handled::No {
                        message: (request, responder),
                        retry: false,
                    });
                }
                responder.respond(initialize.initialize(request.params()))?;
                Ok(Handled::Yes)
            },
            on_receive_request!(),
        )
        .on_receive_request(
            // No authentication methods are offered; as the official
            // profile, `authenticate` is answered with nothing to do.
            async move |_request: AuthenticateRequest, responder, _cx| {
                responder.respond_with_result(typed(serde_json::json!({})))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: NewSessionRequest, responder, cx| {
                let (front, connection) = (Arc::clone(&new), cx.clone());
                let params = params(&request);
                answer_later(&cx, responder, async move {
                    front
                        .open(connection, "session/new", &params, Open::New)
                        .await
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: LoadSessionRequest, responder, cx| {
                let (front, connection) = (Arc::clone(&load), cx.clone());
                let params = params(&request);
                answer_later(&cx, responder, async move {
                    front
                        .open(connection, "session/load", &params, Open::Load)
                        .await
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: ResumeSessionRequest, responder, cx| {
                let (front, connection) = (Arc::clone(&resume), cx.clone());
                let params = params(&request);
                answer_later(&cx, responder, async move {
                    front
                        .open(connection, "session/resume", &params, Open::Resume)
                        .await
                })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: PromptRequest, responder, cx| {
                let (front, params) = (Arc::clone(&prompt), params(&request));
                answer_later(&cx, responder, async move { front.prompt(&params).await })
            },
            on_receive_request!(),
        )
        .on_receive_notification(
            async move |notification: CancelNotification, cx| {
                let front = Arc::clone(&cancel);
                cx.spawn(async move {
                    if let Err(err) = front.cancel(&params(&notification)).await {
                        tracing::warn!("session/cancel: {err}");
                    }
                    Ok(())
                })
            },
            on_receive_notification!(),
        )
        .on_receive_request(
            async move |request: ListSessionsRequest, responder, cx| {
                let (front, params) = (Arc::clone(&list), params(&request));
                answer_later(&cx, responder, async move { front.list(&params).await })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: CloseSessionRequest, responder, cx| {
                let (front, params) = (Arc::clone(&close), params(&request));
                answer_later(&cx, responder, async move { front.close(&params).await })
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionConfigOptionRequest, responder, _cx| {
                responder
                    .respond_with_result(answer(config_option.set_config_option(&params(&request))))
            },
            on_receive_request!(),
        )
        .on_receive_request(
            async move |request: SetSessionModeRequest, responder, _cx| {
                responder.respond_with_result(answer(mode.set_mode(&params(&request))))
            },
            on_receive_request!(),
        )
        // Last: any other request, in the official profile's words.
        .on_receive_request(
            async move |request: UntypedMessage, responder: Responder<Value>, _cx| {
                let method = request.method().to_owned();
                let error = agent_client_protocol::Error::new(
                    agent_client_protocol::ErrorCode::METHOD_NOT_FOUND,
                    format!("\"Method not found\": {method}"),
                )
                .data(serde_json::json!({"method": method}));
                responder.respond_with_error(error)
            },
            on_receive_request!(),
        )
        .connect_to(transport::lines(input, output, MAX_LINE_BYTES));
    let served = tokio::select! {
        served = connection => served,
        () = stop => Ok(()),
    };
    front.shutdown().await;
    served.map_err(|err| AcpError::Stopped(format!("the ACP connection failed: {}", err.message)))
}

/// Answers `responder` on a task of its own with what `work` settles to,
/// so that a slow request never holds the connection's dispatch loop.
fn answer_later<T: JsonRpcResponse + DeserializeOwned>(
    cx: &ConnectionTo<Client>,
    responder: Responder<T>,
    work: impl Future<Output = Result<Value, AcpError>> + Send + 'static,
) -> Result<(), agent_client_protocol::Error> {
    cx.spawn(async move { responder.respond_with_result(answer(work.await)) })
}

/// A request's params as JSON.
fn params(request: &impl Serialize) -> Value {
    serde_json::to_value(request).unwrap_or(Value::Null)
}

/// A JSON result as the response type `T`.
fn typed<T: DeserializeOwned>(value: Value) -> Result<T, agent_client_protocol::Error> {
    serde_json::from_value(value).map_err(agent_client_protocol::Error::into_internal_error)
}

/// A front result as the response type `T`, or its wire error.
fn answer<T: DeserializeOwned>(
    result: Result<Value, AcpError>,
) -> Result<T, agent_client_protocol::Error> {
    result.map_err(|err| err.to_wire()).and_then(typed)
}
