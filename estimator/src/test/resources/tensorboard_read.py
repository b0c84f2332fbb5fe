"""Reads a run directory's TensorBoard event files with TensorBoard's own reader, for the tests: prints
one JSON object, for each scalar tag its events as [step, value, wall_time]; with the argument
"histograms", for each histogram tag its events as [step, min, max, num, sum, sum_squares,
bucket_limit, bucket]."""
import json
import sys

from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

accumulator = EventAccumulator(sys.argv[1], size_guidance={"scalars": 0, "histograms": 0})
accumulator.Reload()
if sys.argv[2:] == ["histograms"]:
    print(json.dumps({tag: [[e.step, e.histogram_value.min, e.histogram_value.max, e.histogram_value.num,
                             e.histogram_value.sum, e.histogram_value.sum_squares,
                             list(e.histogram_value.bucket_limit), list(e.histogram_value.bucket)]
                            for e in accumulator.Histograms(tag)]
                      for tag in accumulator.Tags()["histograms"]}))
else:
    print(json.dumps({tag: [[e.step, e.value, e.wall_time] for e in accumulator.Scalars(tag)]
                      for tag in accumulator.Tags()["scalars"]}))
