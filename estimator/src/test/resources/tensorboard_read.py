"""Reads a run directory's TensorBoard event files with TensorBoard's own reader, for the tests: prints
one JSON object, for each scalar tag its events as [step, value, wall_time]."""
import json
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

accumulator = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0})
accumulator.Reload()
print(json.dumps({tag: [[e.step, e.value, e.wall_time] for e in accumulator.Scalars(tag)]
                  for tag in accumulator.Tags()["scalars"]}))
