public enum PortvaktVersion { public static let current = "0.1.0" }
