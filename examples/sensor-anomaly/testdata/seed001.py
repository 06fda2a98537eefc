#!/usr/bin/env python3
"""Seed 001's job, run by plain Python: the reference for the example's test.

    python3 seed001.py READINGS

prints what the PyFlink job of shared/seeds/001_*.txt prints for READINGS, a
JSON array of readings (like ../readings.json) or JSON lines. The two
operators, SerializerMapFunction and LookupKeyedProcessFunction, are the
seed's code copied verbatim; the few PyFlink classes they use are replaced by
stand-ins below, and run() wires them as the seed's DAG does, with
parallelism 1: from_collection -> key_by(id) -> process -> map -> print.

Keyed state is what Flink's is: the map state belongs to the current key, the
reading's id, and holds the Python objects put into it (the operators are
chained, so nothing is serialised between them).
"""
import json
import pathlib
import sys


# --- stand-ins for the PyFlink classes the seed's code refers to ---

class MapFunction:
    pass


class FlatMapFunction:
    pass


class Types:
    @staticmethod
    def STRING():
        return 'STRING'

    @staticmethod
    def FLOAT():
        return 'FLOAT'


class MapStateDescriptor:
    def __init__(self, name, key_type, value_type):
        self.name = name


class MapState:
    """A keyed MapState: one dict per key of the keyed stream."""

    def __init__(self, context):
        self.context = context
        self.maps = {}

    def get_internal_state(self):
        return self.maps.setdefault(self.context.current_key, {})

    def put(self, key, value):
        self.get_internal_state()[key] = value


class RuntimeContext:
    def __init__(self):
        self.current_key = None

    def get_map_state(self, state_desc):
        return MapState(self)


# --- the seed's operators, verbatim ---

class SerializerMapFunction(MapFunction):
    """
    Custom map function to format readings in a compact way
    """
    def map(self, value):
        record = '|'.join([k + '=' + str(v) for k, v in value.items()])
        return record


class LookupKeyedProcessFunction(FlatMapFunction):
    """
    Function to track keyed sensor readings and emit additional events when an anomaly is detected.
    """
    def __init__(self):
        # We can define our state here, but it won't be available until the `open` lifecycle function is called
        self.lut_state = None

    def open(self, runtime_context: RuntimeContext):
        state_desc = MapStateDescriptor('LUT', Types.STRING(), Types.FLOAT())
        # Here we can fully register this operator's state and pass in it's type definition
        # (remember under the hood this translates into a Java object so it needs to be strongly typed)
        self.lut_state = runtime_context.get_map_state(state_desc)

    def flat_map(self, value):
        # get a handle on state reference
        lut = self.lut_state.get_internal_state()
        # try to get the previously tracked value (and default to the current if one doesn't exist yet)
        prev = lut.get(value.get("kind")) or value.get("value")
        # calculate the diff
        diff = abs(prev - value.get("value"))
        if diff > 1:
            # big diff :)
            yield {'id': value.get("id"), 'value': value.get("value"), 'message': 'Sensor offset alert!', 'delta': diff}
        # update the current state with this event's value
        # notice how we are mapping by kind so we can track multiple sensor readings if we wanted to
        self.lut_state.put(value.get("kind"), value.get("value"))
        yield value


# --- the seed's DAG ---

def run(path):
    text = pathlib.Path(path).read_text(encoding='utf-8')
    if text.lstrip().startswith('['):
        data = json.loads(text)
    else:  # JSON lines; split at '\n' only, as weir's file source does
        data = [json.loads(line) for line in text.split('\n') if line.strip()]
    context = RuntimeContext()
    process = LookupKeyedProcessFunction()
    process.open(context)
    serializer = SerializerMapFunction()
    key = lambda x: x.get("id")  # .key_by(lambda x: x.get("id"), Types.STRING())
    for reading in data:  # env.from_collection(data)
        context.current_key = key(reading)
        for record in process.flat_map(reading):  # .process(LookupKeyedProcessFunction(), ...)
            print(serializer.map(record))  # .map(SerializerMapFunction(), ...).print()


if __name__ == '__main__':
    sys.stdout.reconfigure(encoding='utf-8', newline='\n')
    run(sys.argv[1])
