"""Serve moto on 127.0.0.1:$MOTO_PORT with the buckets of $MOTO_BUCKETS, until SIGTERM."""

import os
import signal

import boto3
from moto.moto_server.threaded_moto_server import ThreadedMotoServer


def main() -> None:
    port = int(os.environ["MOTO_PORT"])
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    s3 = boto3.client("s3", endpoint_url=f"http://127.0.0.1:{port}", region_name="us-east-1",
                      aws_access_key_id="testing", aws_secret_access_key="testing")
    for bucket in filter(None, os.environ.get("MOTO_BUCKETS", "").split(",")):
        s3.create_bucket(Bucket=bucket)
    print(f"moto serving on 127.0.0.1:{port}", flush=True)
    signal.sigwait({signal.SIGTERM, signal.SIGINT})
    server.stop()


if __name__ == "__main__":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM, signal.SIGINT})
    main()
