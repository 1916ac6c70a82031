"""lance_adapter_spark/spark_internals.py, the one module that touches PySpark beyond its
public API: a Spark outside the supported releases, or one without an attribute the source
uses, is refused at registration with one sentence. (Every Spark test registers the source on
the real Spark 4 session, which passes the same check; an older or changed Spark is what the
installed one cannot be made into, so stand-ins play it here.)"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from lance_adapter_spark.options import LanceSourceError
from lance_adapter_spark.spark_internals import check_supported


def stand_in_session(version: str, **missing: bool) -> SimpleNamespace:
    context = SimpleNamespace(_python_includes=[], pythonExec="python3", environment={},
                              _gateway=object())
    for name in missing:
        delattr(context, name)
    return SimpleNamespace(version=version, sparkContext=context, _jvm=object(),
                           _jsparkSession=object())


def test_a_supported_spark_passes() -> None:
    check_supported(stand_in_session("4.0.1"))


def test_another_major_release_is_refused_by_name() -> None:
    with pytest.raises(LanceSourceError, match=r"runs on Spark 4\.x; this session is Spark 3\.5"):
        check_supported(stand_in_session("3.5.3"))


def test_a_spark_without_what_the_source_uses_names_it() -> None:
    with pytest.raises(LanceSourceError, match=r"Spark 4\.9\.0: it has no "
                       r"SparkContext\._python_includes"):
        check_supported(stand_in_session("4.9.0", _python_includes=True))
