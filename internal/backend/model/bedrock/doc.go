// Package bedrock is the Amazon Bedrock provider: one ConverseStream call
// per Stream, through aws-sdk-go-v2/service/bedrockruntime, mapped to model
// chunks.
//
// Contracts:
//   - the caller injects the aws.Config (region, credentials, BaseEndpoint);
//     the client's retryer is aws.NopRetryer, whole-call retries belong to
//     model.NewTransport;
//   - a stream is complete only when it ends cleanly after messageStop and
//     the metadata event that carries the usage (Bedrock sends it last);
//     anything else is a fragment the transport drops;
//   - Converse has no response id: Response.ResponseID is the request id
//     (x-amzn-RequestId);
//   - an HTTP error is a *model.StatusError with its status, request id and
//     retry-after when present; an exception inside the stream is one too,
//     with the status the same exception has over HTTP
//     (throttlingException 429, serviceUnavailableException 503,
//     modelStreamErrorException and internalServerException 500,
//     validationException 400);
//   - a frame that does not decode (bad checksum, payload not JSON) wraps
//     model.ErrMalformed;
//   - the secret access key and session token are redacted from every
//     message the service returns.
package bedrock
