"""ConversionReview answers checked as apiextensions-apiserver's webhook_converter.go (1.32)."""

from __future__ import annotations

import asyncio
import copy
from typing import Any

import orjson
import pytest

from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.server.webhooks import client as webhookclient
from kplane.server.webhooks import conversion

RECORD = ResourceRecord(
    group="ex.kplane.dev",
    version="v2",
    plural="widgets",
    singular="widget",
    kind="Widget",
    list_kind="WidgetList",
    scope="Namespaced",
    storage_version="v1",
    custom=True,
    conversion_webhook={"clientConfig": {"url": "https://hook/convert"}, "conversionReviewVersions": ["v1"]},
)


def _obj(version: str, name: str = "a") -> dict[str, Any]:
    return {
        "apiVersion": f"ex.kplane.dev/{version}",
        "kind": "Widget",
        "metadata": {"name": name, "namespace": "ns", "uid": f"u-{name}", "labels": {"x": "1"}},
        "spec": {},
    }


class _Client:
    """Answers every review with ``answer(review)``."""

    def __init__(self, answer: Any) -> None:
        self.answer = answer
        self.reviews: list[Any] = []

    async def post(self, target: webhookclient.Target, body: bytes, timeout: int, **_: Any) -> Any:  # noqa: ASYNC109
        review = orjson.loads(body)
        self.reviews.append(review)
        return self.answer(review)


def _ok(change: Any = None) -> Any:
    def answer(review: Any) -> Any:
        out = []
        for o in review["request"]["objects"]:
            new = copy.deepcopy(o)
            new["apiVersion"] = review["request"]["desiredAPIVersion"]
            if change is not None:
                change(new)
            out.append(new)
        return {
            "apiVersion": "apiextensions.k8s.io/v1",
            "kind": "ConversionReview",
            "response": {
                "uid": review["request"]["uid"],
                "convertedObjects": out,
                "result": {"status": "Success"},
            },
        }

    return answer


def _convert(
    client: _Client, objects: list[dict[str, Any]], *, as_list: bool = False
) -> list[dict[str, Any]]:
    converter = conversion.WebhookConverter(client)  # type: ignore[arg-type]
    return asyncio.run(converter.convert(RECORD, objects, "ex.kplane.dev/v2", as_list=as_list))


def test_only_objects_at_another_version_are_sent_in_one_review() -> None:
    """A list is one review of the objects not already at the desired version."""
    client = _Client(_ok())
    out = _convert(client, [_obj("v1", "a"), _obj("v2", "b"), _obj("v1", "c")], as_list=True)
    assert [o["apiVersion"] for o in out] == ["ex.kplane.dev/v2"] * 3
    (review,) = client.reviews
    assert [o["metadata"]["name"] for o in review["request"]["objects"]] == ["a", "c"]


def test_only_labels_and_annotations_of_the_answer_are_kept() -> None:
    """restoreObjectMeta: the original metadata, with the converted labels and annotations."""

    def change(obj: dict[str, Any]) -> None:
        obj["metadata"]["labels"] = {"y": "2"}
        obj["metadata"]["resourceVersion"] = "999"

    (out,) = _convert(_Client(_ok(change)), [_obj("v1")])
    assert out["metadata"] == {"name": "a", "namespace": "ns", "uid": "u-a", "labels": {"y": "2"}}


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        (
            lambda review: {"apiVersion": "v1", "kind": "Status"},
            "conversion webhook for ex.kplane.dev/v1, Kind=Widget failed: expected webhook response of "
            "apiextensions.k8s.io/v1, Kind=ConversionReview, got /v1, Kind=Status",
        ),
        (
            lambda review: {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "ConversionReview",
                "response": {
                    "uid": review["request"]["uid"],
                    "result": {"status": "Failure", "message": "nope"},
                },
            },
            "conversion webhook for ex.kplane.dev/v1, Kind=Widget failed: nope",
        ),
        (
            _ok(lambda o: o["metadata"].update(name="other")),
            "conversion webhook for ex.kplane.dev/v1, Kind=Widget returned invalid object: "
            "must have the same name: a != other",
        ),
        (
            _ok(lambda o: o.update(apiVersion="ex.kplane.dev/v3")),
            "conversion webhook for ex.kplane.dev/v1, Kind=Widget returned invalid object at index 0: "
            "invalid groupVersion (expected ex.kplane.dev/v2, received ex.kplane.dev/v3)",
        ),
    ],
    ids=["wrong-kind", "failure-result", "renamed", "wrong-version"],
)
def test_bad_answers_fail_with_upstreams_text(answer: Any, message: str) -> None:
    """Malformed or failed answers give upstream's errors, as a 500 without reason."""
    with pytest.raises(errors.APIError) as caught:
        _convert(_Client(answer), [_obj("v1")])
    assert (caught.value.code, caught.value.reason, caught.value.message) == (500, "", message)


def test_list_answers_of_the_wrong_length_fail() -> None:
    """The answer must hold one object per object sent."""

    def short(review: Any) -> Any:
        answer = _ok()(review)
        answer["response"]["convertedObjects"] = answer["response"]["convertedObjects"][:1]
        return answer

    with pytest.raises(errors.APIError) as caught:
        _convert(_Client(short), [_obj("v1", "a"), _obj("v1", "b")], as_list=True)
    assert (
        caught.value.message
        == "conversion webhook for ex.kplane.dev/v1, Kind=WidgetList returned 1 objects, expected 2"
    )
