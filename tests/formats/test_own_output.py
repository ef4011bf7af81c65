"""ctxlab never writes what it then refuses: a Responses image given by file_id
converted to OpenAI Chat, an audio-only user turn applied or converted for Anthropic."""
from __future__ import annotations

import json

from ctxlab.cli import main

IMAGE = {"input": [{"type": "message", "role": "user", "content": [
    {"type": "input_text", "text": "What is this?"}, {"type": "input_image", "file_id": "file-abc", "detail": "auto"}]},
    {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A cat."}]}]}
IMAGE_ONLY = {"input": [{"type": "message", "role": "user", "content": [{"type": "input_image", "file_id": "file-abc"}]},
                        {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "A cat."}]}]}
AUDIO = {"messages": [{"role": "user", "content": [{"type": "input_audio", "input_audio": {"data": "AAAA", "format": "wav"}}]},
                      {"role": "assistant", "content": "I heard you."}]}


def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_a_file_id_image_is_noted_and_the_output_reads_back(tmp_path, capsys):
    src = tmp_path / "image.json"
    src.write_text(json.dumps(IMAGE))
    code, out, err = _run(capsys, "convert", str(src), "--to", "openai")
    assert code == 0 and "an image given by detail, file_id (no URL) has no place in OpenAI Chat" in err
    back = tmp_path / "back.json"
    back.write_text(out)
    assert _run(capsys, "count", str(back))[0] == 0  # what ctxlab wrote, ctxlab reads
    assert json.loads(out)["messages"][0]["content"] == [{"type": "text", "text": "What is this?"}]


def test_a_message_with_nothing_the_target_can_hold_is_an_error_naming_it(tmp_path, capsys):
    for doc, target in ((IMAGE_ONLY, "openai"), (AUDIO, "anthropic")):
        src = tmp_path / "in.json"
        src.write_text(json.dumps(doc))
        for argv in (["convert", str(src), "--to", target], ["apply", str(src), "--strategy", "none", "--to", target]):
            code, out, err = _run(capsys, *argv)
            assert code == 2 and out == "" and err.startswith("ctxlab: message 0: nothing of this message"), err
            assert "internal error" not in err
