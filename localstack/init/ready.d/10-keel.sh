#!/bin/bash
# Creates Keel's DynamoDB table and S3 bucket in LocalStack. The table
# shape is internal/backend/store/dynamo.TableInput: keys pk/sk and four run-listing
# indexes projecting g_owner and g_status. Idempotent: existing resources
# are left alone.
set -euo pipefail

TABLE="${KEEL_TABLE:-keel}"
BUCKET="${KEEL_ARTIFACT_BUCKET:-keel-artifacts}"

gsi() {
  printf '{"IndexName":"%s","KeySchema":[{"AttributeName":"%s","KeyType":"HASH"},{"AttributeName":"g_sort","KeyType":"RANGE"}],"Projection":{"ProjectionType":"INCLUDE","NonKeyAttributes":["g_owner","g_status"]}}' "$1" "$2"
}

if ! awslocal dynamodb describe-table --table-name "$TABLE" >/dev/null 2>&1; then
  awslocal dynamodb create-table \
    --table-name "$TABLE" \
    --billing-mode PAY_PER_REQUEST \
    --attribute-definitions \
      AttributeName=pk,AttributeType=S AttributeName=sk,AttributeType=S \
      AttributeName=g_all,AttributeType=S AttributeName=g_status,AttributeType=S \
      AttributeName=g_session,AttributeType=S AttributeName=g_owner,AttributeType=S \
      AttributeName=g_sort,AttributeType=S \
    --key-schema AttributeName=pk,KeyType=HASH AttributeName=sk,KeyType=RANGE \
    --global-secondary-indexes "[$(gsi runs-all g_all),$(gsi runs-by-status g_status),$(gsi runs-by-session g_session),$(gsi runs-by-owner g_owner)]" \
    >/dev/null
  awslocal dynamodb wait table-exists --table-name "$TABLE"
  echo "keel: created table $TABLE"
fi

if ! awslocal s3api head-bucket --bucket "$BUCKET" >/dev/null 2>&1; then
  awslocal s3 mb "s3://$BUCKET" >/dev/null
  echo "keel: created bucket $BUCKET"
fi
