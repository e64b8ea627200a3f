"""moto with Lambda invocations routed to the AWS Lambda Runtime Interface
Emulator instead of Docker containers.

This is the one piece of the AWS shape that is replaced: where moto would
start a Docker container for a Lambda invocation (LambdaFunction._invoke_lambda),
it POSTs the event to the aws-lambda-rie endpoint that serves that function
on this host (the real bootstrap binary on the real Lambda Runtime API).
Every AWS API (DynamoDB, S3, Lambda, Step Functions) is moto's own.

One fix of moto itself (moto 5.2.1): StartExecution deep-copies the state
machine, and the state machine refers to its whole backend, so once an
execution has run (its worker holds a lock) every later StartExecution in
the region fails with "cannot pickle '_thread.RLock' object". The copy is
now shallow (StateMachine.__deepcopy__).

A second fix of moto 5.2.1: its states:startExecution integration passes
the task's parameters (StateMachineArn, Name, Input, as the States Language
and AWS write them) to botocore unchanged, and botocore's Step Functions
model names them stateMachineArn, name, input: every startExecution task
fails with KeyError. The parameters are renamed after moto's own
normalisation (StateTaskServiceSfn._normalise_parameters); and an error
answer without a request id no longer hides the error's name behind a
KeyError('RequestId') (StateTaskServiceSfn._from_error).

Two changes of moto's DynamoDB cost, not of its answers (a simulation
of thousands of steps spent most of its time in them, and the cost grew
with the table):
  * TransactWriteItems deep-copied every table it touches before it
    began, to restore it on a cancel: O(table) per transaction. It now
    saves only the items the transaction names and puts them back
    (fast_transact_write_items).
  * Query on the table's own key compared the key of every item of the
    table: O(table) per query. It now reads the one partition the key
    names (partition_query); a query on an index is unchanged.

Two more settings, not patches:
  * moto's Step Functions engine is turned on (stepfunctions
    execute_state_machine), so executions run the definition.
  * requests are served one at a time, except Lambda Invoke: moto's
    DynamoDB has no per-item atomicity under concurrent requests, and an
    invocation must not hold the lock, since the function it runs calls
    back into moto.

Environment:
  AWSLOCAL_FUNCTIONS  path of a JSON file {function name: RIE base URL},
                      read at every invocation (the driver restarts
                      function processes on new ports). A published
                      version has its own sandbox, under NAME:N; an
                      alias resolves to its version before this runs.
Usage: python3 moto_rie.py PORT
"""

import copy
import json
import os
import sys
import threading
import urllib.error
import urllib.request

from werkzeug.serving import run_simple

from moto.awslambda import models as lambda_models
from moto.core.config import default_user_config
from moto.core.exceptions import JsonRESTError
from moto.dynamodb import models as dynamodb_models
from moto.dynamodb.models.dynamo_type import DynamoType
from moto.dynamodb.models.table import Table
from moto.moto_server.werkzeug_app import DomainDispatcherApplication, create_backend_app
from moto.stepfunctions.models import StateMachine
from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
    state_task_service_sfn,
)

# Lambda reports a runtime that exits mid-invocation (a crash, an OOM
# kill) as a function error of this type.
RUNTIME_EXIT = "Runtime.ExitError"


class ServiceException(JsonRESTError):
    """Lambda's HTTP 500: the sandbox serving the invocation was lost (its
    whole process, emulator included, is gone). Step Functions names it
    Lambda.ServiceException."""

    code = 500

    def __init__(self, message):
        super().__init__("ServiceException", message)


def rie_url(function_name):
    with open(os.environ["AWSLOCAL_FUNCTIONS"]) as f:
        return json.load(f).get(function_name)


# One lock per function: a function has one sandbox here, and a sandbox
# serves one invocation at a time (the emulator crashes on a second one
# while the first runs). Lambda would start another sandbox; here a
# concurrent invocation waits for the sandbox, which changes only when it
# runs (the sub-agents scenario runs a parent's and its children's steps).
_function_locks = {}
_function_locks_guard = threading.Lock()


def function_lock(name):
    with _function_locks_guard:
        return _function_locks.setdefault(name, threading.Lock())


def route_key(fn):
    """NAME for $LATEST, NAME:N for a published version (moto's version
    objects are copies of the function with set_version(N))."""
    version = str(getattr(fn, "version", "$LATEST"))
    if version in ("", "$LATEST"):
        return fn.function_name
    return fn.function_name + ":" + version


def invoke_rie(self, event=None):
    """Replaces LambdaFunction._invoke_lambda (the Docker container start):
    returns (response, errored, logs) as that method does."""
    with function_lock(route_key(self)):
        return _invoke_rie(self, event)


def _invoke_rie(self, event=None):
    key = route_key(self)
    url = rie_url(key)
    if not url:
        return json.dumps({"errorType": "ResourceNotFoundException",
                           "errorMessage": "no function process for " + key}), True, ""
    body = event if isinstance(event, str) else json.dumps(event if event is not None else {})
    req = urllib.request.Request(url + "/2015-03-31/functions/function/invocations",
                                 data=body.encode("utf-8"), method="POST",
                                 headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=float(self.timeout) + 30) as resp:
            out = resp.read().decode("utf-8")
    except urllib.error.HTTPError as e:
        # The emulator answers 502 when the runtime died during the
        # invocation.
        detail = e.read().decode("utf-8", "replace")
        return json.dumps({"errorType": RUNTIME_EXIT,
                           "errorMessage": "Runtime exited during the invocation: HTTP %d %s" % (e.code, detail)}), True, ""
    except (urllib.error.URLError, ConnectionError, TimeoutError) as e:
        # Nothing answers on the function's endpoint, or the connection
        # broke: the sandbox itself is gone.
        raise ServiceException("the function's sandbox was lost: %s" % e)
    errored = False
    try:
        parsed = json.loads(out)
        # aws-lambda-go's error response: the two fields and nothing else.
        errored = isinstance(parsed, dict) and "errorType" in parsed and "errorMessage" in parsed \
            and set(parsed) <= {"errorType", "errorMessage", "stackTrace"}
    except ValueError:
        pass
    return out, errored, ""


def state_machine_deepcopy(self, memo):
    """A shallow copy: the execution keeps the definition, name and
    settings the machine had when it started (update_state_machine assigns
    new values, it does not mutate them), and shares the backend and the
    versions, which hold live executions."""
    clone = copy.copy(self)
    memo[id(self)] = clone
    return clone


_sfn_normalise = state_task_service_sfn.StateTaskServiceSfn._normalise_parameters


def sfn_normalise_parameters(self, parameters, boto_service_name=None, service_action_name=None):
    _sfn_normalise(self, parameters, boto_service_name=boto_service_name, service_action_name=service_action_name)
    if service_action_name is None:
        for k in [k for k in parameters if k[:1].isupper()]:
            parameters[k[0].lower() + k[1:]] = parameters.pop(k)


_sfn_from_error = state_task_service_sfn.StateTaskServiceSfn._from_error


def sfn_from_error(self, env, ex):
    meta = getattr(ex, "response", {}).get("ResponseMetadata") if hasattr(ex, "response") else None
    if isinstance(meta, dict):
        meta.setdefault("RequestId", "")
    return _sfn_from_error(self, env, ex)


class _TableCopyIsTheTable:
    """moto's DynamoDB models module's view of copy: a Table is not copied
    (fast_transact_write_items restores what a transaction touched)."""

    def __getattr__(self, name):
        return getattr(copy, name)

    @staticmethod
    def deepcopy(x, memo=None):
        if isinstance(x, Table):
            return x
        return copy.deepcopy(x, memo)


_transact_write_items = dynamodb_models.DynamoDBBackend.transact_write_items


def fast_transact_write_items(self, transact_items):
    saved = []
    for entry in transact_items[:100]:
        if len(entry) != 1:
            continue
        _, op = next(iter(entry.items()))
        table = self.tables.get(op.get("TableName"))
        key = op.get("Item") if "Item" in op else op.get("Key")
        if table is None or not isinstance(key, dict) or table.hash_key_attr not in key:
            continue
        hash_value = DynamoType(key[table.hash_key_attr])
        range_value = None
        if table.range_key_attr is not None:
            if table.range_key_attr not in key:
                continue
            range_value = DynamoType(key[table.range_key_attr])
        old = table.get_item(hash_value, range_value)
        saved.append((table, hash_value, range_value, copy.deepcopy(old)))
    try:
        return _transact_write_items(self, transact_items)
    except Exception:
        for table, hash_value, range_value, old in reversed(saved):
            if range_value is None:
                table.items.pop(hash_value, None)
                if old is not None:
                    table.items[hash_value] = old
                continue
            part = table.items[hash_value]
            part.pop(range_value, None)
            if old is not None:
                part[range_value] = old
            elif not part:
                table.items.pop(hash_value, None)
        raise


_table_query = Table.query


def partition_query(self, hash_key, *args, **kwargs):
    index_name = args[6] if len(args) > 6 else kwargs.get("index_name")
    if index_name or hash_key is None or self.range_key_attr is None:
        return _table_query(self, hash_key, *args, **kwargs)
    part = self.items.get(hash_key, {})
    # Requests are serialized (Serialized): no other request sees this.
    self.all_items = lambda: list(part.values())
    try:
        return _table_query(self, hash_key, *args, **kwargs)
    finally:
        del self.all_items


class Serialized:
    """One request at a time, except Lambda Invoke (see the module doc)."""

    def __init__(self, app):
        self.app = app
        self.lock = threading.Lock()

    def __call__(self, environ, start_response):
        path = environ.get("PATH_INFO", "")
        if path.startswith("/2015-03-31/functions/") and path.rstrip("/").endswith("/invocations"):
            return self.app(environ, start_response)
        with self.lock:
            # Materialize the body inside the lock: a WSGI app may be lazy.
            return list(self.app(environ, start_response))


def main():
    port = int(sys.argv[1])
    os.environ["MOTO_PORT"] = str(port)  # moto's Step Functions engine calls Lambda here
    default_user_config["stepfunctions"] = {"execute_state_machine": True}
    lambda_models.LambdaFunction._invoke_lambda = invoke_rie
    StateMachine.__deepcopy__ = state_machine_deepcopy
    state_task_service_sfn.StateTaskServiceSfn._normalise_parameters = sfn_normalise_parameters
    state_task_service_sfn.StateTaskServiceSfn._from_error = sfn_from_error
    dynamodb_models.copy = _TableCopyIsTheTable()
    dynamodb_models.DynamoDBBackend.transact_write_items = fast_transact_write_items
    Table.query = partition_query
    app = DomainDispatcherApplication(create_backend_app)
    run_simple("127.0.0.1", port, Serialized(app), threaded=True)


if __name__ == "__main__":
    main()
