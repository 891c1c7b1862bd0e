print("posecast-scene: placeholder")
