// Package s3 stores artifacts in an S3 bucket through aws-sdk-go-v2.
//
// Objects are keyed Options.Prefix + Key.Path(), i.e.
// runs/{run_id}/checkpoints/{checkpoint_id}/{name}. Each object carries the
// hex sha256 of its content in the user metadata "sha256", and S3's own
// ChecksumSHA256 (sent with the upload, so S3 rejects bytes damaged in
// transit, and requested back with ChecksumMode on reads).
//
// Immutability rests on S3 conditional writes: PutObject is sent with
// If-None-Match: "*", so S3 refuses to overwrite an existing key (412
// PreconditionFailed). On 412 the store reads the existing object's
// metadata: the same sha256 and size make the Put a no-op, anything else is
// artifact.ErrExists. A 409 ConditionalRequestConflict (another conditional
// write to the key in flight) is retried a few times.
//
// Get re-hashes the body and compares it with the metadata hash (and with
// ChecksumSHA256 when S3 returns one): a mismatch is artifact.ErrCorrupt and
// no bytes are returned. An object without our metadata is treated as
// corrupt, since its content cannot be verified.
//
// List pages through ListObjectsV2 and reads each object's metadata with
// HeadObject (S3 does not list user metadata), so it costs one request per
// blob; it is meant for debug bundles and operators, not the step path.
// Keys under the run's prefix that are not artifact keys are skipped.
//
// The client is injected (built by the caller from an aws.Config), so the
// same code runs against AWS, LocalStack or an in-process test server.
// Server-side encryption settings are passed in Options and sent with every
// PutObject.
package s3
